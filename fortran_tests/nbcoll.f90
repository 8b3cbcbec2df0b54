! Nonblocking and persistent collectives from Fortran: MPI_IALLREDUCE, MPI_IREDUCE,
! MPI_IBCAST, MPI_IBARRIER completed with MPI_WAITALL in reverse order, and a persistent
! MPI_ALLREDUCE_INIT started several times with MPI_START, checked against closed forms.
program nbcoll
  use mpi
  implicit none
  integer :: ierr, rank, size, i, it, req(4), preq
  double precision :: x(100), y(100), z(100), w(100)
  integer :: b(3), fails
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
  fails = 0
  do i = 1, 100
    x(i) = dble(rank + 1) * i
  end do
  b = 0
  if (rank == 0) b = (/ 7, 8, 9 /)
  call MPI_IALLREDUCE(x, y, 100, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req(1), ierr)
  call MPI_IREDUCE(x, z, 100, MPI_DOUBLE_PRECISION, MPI_MAX, size - 1, MPI_COMM_WORLD, req(2), ierr)
  call MPI_IBCAST(b, 3, MPI_INTEGER, 0, MPI_COMM_WORLD, req(3), ierr)
  call MPI_IBARRIER(MPI_COMM_WORLD, req(4), ierr)
  if (ierr /= MPI_SUCCESS) fails = fails + 1
  call MPI_WAIT(req(4), MPI_STATUS_IGNORE, ierr)
  call MPI_WAITALL(3, req, MPI_STATUSES_IGNORE, ierr)
  do i = 1, 100
    if (y(i) /= dble(size * (size + 1) / 2) * i) fails = fails + 1
    if (rank == size - 1 .and. z(i) /= dble(size) * i) fails = fails + 1
  end do
  if (b(1) /= 7 .or. b(3) /= 9) fails = fails + 1
  if (req(1) /= MPI_REQUEST_NULL) fails = fails + 1
  ! Persistent: one request, three starts with new data.
  call MPI_ALLREDUCE_INIT(x, w, 100, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, preq, ierr)
  do it = 1, 3
    do i = 1, 100
      x(i) = dble(rank + it) * i
    end do
    call MPI_START(preq, ierr)
    call MPI_WAIT(preq, MPI_STATUS_IGNORE, ierr)
    do i = 1, 100
      if (w(i) /= dble(size * (size - 1) / 2 + size * it) * i) fails = fails + 1
    end do
  end do
  if (preq == MPI_REQUEST_NULL) fails = fails + 1
  call MPI_REQUEST_FREE(preq, ierr)
  if (preq /= MPI_REQUEST_NULL .or. ierr /= MPI_SUCCESS) fails = fails + 1
  call MPI_ALLREDUCE(MPI_IN_PLACE, fails, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a,i0)', 'nbcoll (Fortran): np=', size, ' failures=', fails
  call MPI_FINALIZE(ierr)
  if (fails /= 0) stop 1
end program nbcoll
