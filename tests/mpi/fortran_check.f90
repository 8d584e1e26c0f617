! MPI_BCAST from Fortran (`use mpi`), with the adapter preloaded: integers
! from every root, a 2-D real array, a strided section (a derived datatype),
! then MPI_IBCAST + MPI_WAIT. Every rank checks every element; the output
! line is bcast_check's, which tests/integration/mpi_adapter.sh counts.
program fortran_check
  use mpi
  implicit none
  integer, parameter :: n = 300000
  integer :: ierr, rank, nprocs, i, j, root, bad, all_bad, req, vec, checks
  integer, allocatable :: a(:), b(:)
  double precision, allocatable :: m(:, :)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  allocate(a(n), b(n), m(700, 300))
  bad = 0
  checks = 0
  do root = 0, nprocs - 1
    a = -1
    if (rank == root) then
      do i = 1, n
        a(i) = i * 7 + root
      end do
    end if
    call MPI_Bcast(a, n, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS) bad = bad + 1
    do i = 1, n
      if (a(i) /= i * 7 + root) bad = bad + 1
    end do
    checks = checks + 1
  end do
  m = 0.0d0
  if (rank == 0) then
    do j = 1, 300
      do i = 1, 700
        m(i, j) = dble(i) + 1000.0d0 * dble(j)
      end do
    end do
  end if
  call MPI_Bcast(m, 700 * 300, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  do j = 1, 300
    do i = 1, 700
      if (m(i, j) /= dble(i) + 1000.0d0 * dble(j)) bad = bad + 1
    end do
  end do
  checks = checks + 1
  ! Every other element: a vector datatype, packed by the adapter.
  call MPI_Type_vector(n / 2, 1, 2, MPI_INTEGER, vec, ierr)
  call MPI_Type_commit(vec, ierr)
  a = -5
  if (rank == nprocs - 1) then
    do i = 1, n
      a(i) = 3 * i
    end do
  end if
  call MPI_Bcast(a, 1, vec, nprocs - 1, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (mod(i, 2) == 1 .or. rank == nprocs - 1) then
      if (a(i) /= 3 * i) bad = bad + 1
    else
      if (a(i) /= -5) bad = bad + 1
    end if
  end do
  call MPI_Type_free(vec, ierr)
  checks = checks + 1
  b = -1
  if (rank == 0) b = 42
  call MPI_Ibcast(b, n, MPI_INTEGER, 0, MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  do i = 1, n
    if (b(i) /= 42) bad = bad + 1
  end do
  checks = checks + 1
  call MPI_Allreduce(bad, all_bad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  print '(A,I0,A,I0,A,I0,A,I0,A)', 'bcast_check rank ', rank, ': ', checks, ' checks, ', &
    bad, ' failed here, ', all_bad, ' failed on all ranks'
  call MPI_Finalize(ierr)
  if (all_bad /= 0) stop 1
end program fortran_check
