! Built by CMake with MPI::MPI_Fortran (`use mpi`): checks a reduction.
program hello_f
  use mpi
  implicit none
  integer :: ierr, rank, nproc, total
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nproc, ierr)
  call MPI_ALLREDUCE(rank, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0, a, l1)', 'cmake hello_f np=', nproc, ': ', total == nproc * (nproc - 1) / 2
  call MPI_FINALIZE(ierr)
  if (total /= nproc * (nproc - 1) / 2) call exit(1)
end program hello_f
