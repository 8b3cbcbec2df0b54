! MPI_COMM_SPAWN and MPI_COMM_SPAWN_MULTIPLE from Fortran (`use mpi`): CHARACTER
! commands and argument lists ended by a blank entry, MPI_ARGV_NULL, MPI_ARGVS_NULL,
! MPI_ERRCODES_IGNORE, MPI_COMM_GET_PARENT, an Allreduce across the intercommunicator
! checked against the sum computed here, MPI_COMM_DISCONNECT.
program spawn_f
  use mpi
  implicit none
  integer :: ierr, rank, size, parent, ic, rsize, n, got, want, i, bad, total
  integer :: codes(2), procs(2), infos(2)
  character(len=256) :: prog, arg1, arg2
  character(len=64) :: args(3)
  character(len=256) :: cmds(2)
  character(len=64) :: argvs(2, 3)

  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  call mpi_comm_size(MPI_COMM_WORLD, size, ierr)
  call mpi_comm_get_parent(parent, ierr)
  bad = 0
  if (parent /= MPI_COMM_NULL) then
    ! Child: check the arguments, then sum of parents' (rank + 1) over the intercomm.
    call get_command_argument(1, arg1)
    call get_command_argument(2, arg2)
    n = command_argument_count()
    if (trim(arg1) == 'plain') then
      if (n /= 1 .or. size /= 2) bad = bad + 1
    else if (trim(arg1) == 'args') then
      if (n /= 2 .or. trim(arg2) /= 'two words' .or. size /= 2) bad = bad + 1
    else if (trim(arg1) == '') then
      ! MPI_ARGVS_NULL: no arguments, 1 + 1 processes.
      if (n /= 0 .or. size /= 2) bad = bad + 1
    else
      bad = bad + 1
    end if
    call mpi_comm_remote_size(parent, rsize, ierr)
    call mpi_allreduce(rank + 1, got, 1, MPI_INTEGER, MPI_SUM, parent, ierr)
    want = rsize * (rsize + 1) / 2
    if (got /= want) bad = bad + 1
    call mpi_allreduce(bad, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) call mpi_send(total, 1, MPI_INTEGER, 0, 5, parent, ierr)
    call mpi_comm_disconnect(parent, ierr)
    call mpi_finalize(ierr)
    if (bad /= 0) stop 1
    stop
  end if

  call get_command_argument(0, prog)

  ! 1. No arguments (MPI_ARGV_NULL would give none; 'plain' is one), error codes back.
  args(1) = 'plain'
  args(2) = ' '
  call mpi_comm_spawn(prog, args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, ic, codes, ierr)
  if (ierr /= MPI_SUCCESS .or. codes(1) /= MPI_SUCCESS .or. codes(2) /= MPI_SUCCESS) bad = bad + 1
  call check_children(ic, 2)

  ! 2. Two arguments, one with a blank inside; MPI_ERRCODES_IGNORE.
  args(1) = 'args'
  args(2) = 'two words'
  args(3) = ' '
  call mpi_comm_spawn(prog, args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, ic, MPI_ERRCODES_IGNORE, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  call check_children(ic, 2)

  ! 3. SPAWN_MULTIPLE with MPI_ARGVS_NULL, and with an argument table.
  cmds(1) = prog
  cmds(2) = prog
  procs = (/ 1, 1 /)
  infos = (/ MPI_INFO_NULL, MPI_INFO_NULL /)
  call mpi_comm_spawn_multiple(2, cmds, MPI_ARGVS_NULL, procs, infos, 0, MPI_COMM_WORLD, &
       ic, MPI_ERRCODES_IGNORE, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  call check_children(ic, 2)
  argvs = ' '
  argvs(1, 1) = 'plain'
  argvs(2, 1) = 'args'
  argvs(2, 2) = 'two words'
  call mpi_comm_spawn_multiple(2, cmds, argvs, procs, infos, 0, MPI_COMM_WORLD, &
       ic, codes, ierr)
  ! Command 0 runs 'plain' as a world of 2 and command 1 'args': each child sees
  ! world size 2, so both argument checks apply as written.
  if (ierr /= MPI_SUCCESS .or. codes(1) /= 0 .or. codes(2) /= 0) bad = bad + 1
  call check_children(ic, 2)

  call mpi_allreduce(bad, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total == 0) then
      print '(a,i0,a)', 'spawn_f: ok (np ', size, ')'
    else
      print '(a,i0)', 'spawn_f: FAILED ', total
    end if
  end if
  call mpi_finalize(ierr)
  if (total /= 0) stop 1

contains

  subroutine check_children(ic, nchildren)
    integer, intent(inout) :: ic
    integer, intent(in) :: nchildren
    integer :: rs, s, cbad, ierr2
    call mpi_comm_remote_size(ic, rs, ierr2)
    if (rs /= nchildren) bad = bad + 1
    call mpi_allreduce(rank + 1, s, 1, MPI_INTEGER, MPI_SUM, ic, ierr2)
    if (s /= nchildren * (nchildren + 1) / 2) bad = bad + 1
    if (rank == 0) then
      call mpi_recv(cbad, 1, MPI_INTEGER, 0, 5, ic, MPI_STATUS_IGNORE, ierr2)
      if (cbad /= 0) bad = bad + 1
    end if
    call mpi_comm_disconnect(ic, ierr2)
    if (ic /= MPI_COMM_NULL) bad = bad + 1
  end subroutine check_children
end program spawn_f
