! Which MPI library is this Fortran program (`use mpi`) running on? Prints
! MPI_GET_LIBRARY_VERSION and checks that it contains the first argument ("shmpi"
! for a program built by MPICH's mpif90, "MPICH" for one built by shmpi's and run on
! MPICH), and that an ALLREDUCE through the Fortran binding is right.
program library_version_f
  use mpi
  implicit none
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: version
  character(len=64) :: want
  integer :: ierr, rank, nproc, vlen, mine, total, nl
  logical :: ok, all_ok

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nproc, ierr)
  call MPI_GET_LIBRARY_VERSION(version, vlen, ierr)
  ok = ierr == MPI_SUCCESS .and. vlen > 0 .and. vlen <= MPI_MAX_LIBRARY_VERSION_STRING
  want = ''
  if (command_argument_count() >= 1) call get_command_argument(1, want)
  if (len_trim(want) > 0) ok = ok .and. index(version(1:vlen), trim(want)) > 0
  mine = rank + 1
  call MPI_ALLREDUCE(mine, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  ok = ok .and. total == nproc * (nproc + 1) / 2
  call MPI_ALLREDUCE(ok, all_ok, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    nl = index(version(1:vlen), achar(10)) - 1
    if (nl < 0) nl = vlen
    if (all_ok) then
      print '(a, a)', 'ok: library version: ', version(1:nl)
    else
      print '(a, a)', 'FAIL: library version: ', version(1:nl)
    end if
  end if
  call MPI_FINALIZE(ierr)
  if (.not. all_ok) call exit(1)
end program library_version_f
