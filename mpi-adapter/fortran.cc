// MPI_BCAST from Fortran (mpif.h and `use mpi`) with Open MPI. Its Fortran
// bindings call PMPI_Bcast directly, past the C MPI_Bcast the adapter
// intercepts, so the adapter also provides the Fortran symbols themselves;
// preloaded, they come before libmpi_mpifh's. MPICH's Fortran bindings call
// the C MPI_Bcast (and MPI_Ibcast, MPI_Wait, ...) and need nothing here.
//
// `use mpi_f08` reaches mpi_bcast_f08_, which in Open MPI 4.1 takes the same
// arguments (the buffer's address, a handle's integer, ierror possibly
// absent). Only the blocking broadcast: a Fortran MPI_IBCAST stays with Open
// MPI, whose Fortran MPI_WAIT would not complete the adapter's requests.
#include <dlfcn.h>
#include <mpi.h>

#include "mpi-adapter/call_path.h"

#if defined(OPEN_MPI)

namespace {

// Fortran's MPI_BOTTOM is a common block of its own, not C's MPI_BOTTOM.
void* c_buffer(void* buffer) {
  static void* const bottom = dlsym(RTLD_DEFAULT, "mpi_fortran_bottom_");
  return buffer != nullptr && buffer == bottom ? MPI_BOTTOM : buffer;
}

void fortran_bcast(void* buffer, const MPI_Fint* count, const MPI_Fint* datatype,
                   const MPI_Fint* root, const MPI_Fint* comm, MPI_Fint* ierr) {
  const int rc = ibbcast::mpi::bcast(c_buffer(buffer), *count, PMPI_Type_f2c(*datatype), *root,
                                     PMPI_Comm_f2c(*comm));
  if (ierr != nullptr) *ierr = rc;
}

}  // namespace

extern "C" {

// The spellings Fortran compilers use for MPI_BCAST (gfortran: mpi_bcast_).
void mpi_bcast_(void* b, MPI_Fint* n, MPI_Fint* t, MPI_Fint* r, MPI_Fint* c, MPI_Fint* e) {
  fortran_bcast(b, n, t, r, c, e);
}
void mpi_bcast__(void* b, MPI_Fint* n, MPI_Fint* t, MPI_Fint* r, MPI_Fint* c, MPI_Fint* e) {
  fortran_bcast(b, n, t, r, c, e);
}
void mpi_bcast(void* b, MPI_Fint* n, MPI_Fint* t, MPI_Fint* r, MPI_Fint* c, MPI_Fint* e) {
  fortran_bcast(b, n, t, r, c, e);
}
void MPI_BCAST(void* b, MPI_Fint* n, MPI_Fint* t, MPI_Fint* r, MPI_Fint* c, MPI_Fint* e) {
  fortran_bcast(b, n, t, r, c, e);
}
void mpi_bcast_f08_(void* b, MPI_Fint* n, MPI_Fint* t, MPI_Fint* r, MPI_Fint* c, MPI_Fint* e) {
  fortran_bcast(b, n, t, r, c, e);
}

}  // extern "C"

#endif  // OPEN_MPI
