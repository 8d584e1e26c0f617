! MPI_Bcast through `use mpi_f08` (derived-type handles), with the adapter
! preloaded: integers from every root, every element checked.
program fortran_check_f08
  use mpi_f08
  implicit none
  integer, parameter :: n = 200000
  integer :: rank, nprocs, i, root, bad, all_bad, checks
  integer, allocatable :: a(:)
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  allocate(a(n))
  bad = 0
  checks = 0
  do root = 0, nprocs - 1
    a = -1
    if (rank == root) then
      do i = 1, n
        a(i) = i * 11 + root
      end do
    end if
    call MPI_Bcast(a, n, MPI_INTEGER, root, MPI_COMM_WORLD)
    do i = 1, n
      if (a(i) /= i * 11 + root) bad = bad + 1
    end do
    checks = checks + 1
  end do
  call MPI_Allreduce(bad, all_bad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  print '(A,I0,A,I0,A,I0,A,I0,A)', 'bcast_check rank ', rank, ': ', checks, ' checks, ', &
    bad, ' failed here, ', all_bad, ' failed on all ranks'
  call MPI_Finalize()
  if (all_bad /= 0) stop 1
end program fortran_check_f08
