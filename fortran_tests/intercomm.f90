! Intercommunicators through `use mpi`: the evens and the odds of a COMM_SPLIT
! joined by INTERCOMM_CREATE; COMM_TEST_INTER, COMM_REMOTE_SIZE,
! COMM_REMOTE_GROUP, ALLREDUCE across the groups (each side gets the other's
! sum), BCAST from one group to the other, COMM_DUP and COMM_COMPARE of the
! intercommunicator, INTERCOMM_MERGE (HIGH is LOGICAL) and COMM_FREE.
! On one rank there is no second group: the program only checks the split.
program intercomm
  use mpi
  implicit none
  integer :: rank, np, ierr, nfail, k, i, color, s, sz, r, cres
  integer :: local, inter, inter2, merged, rgroup, wgroup, nlocal, nremote, nevens
  integer :: root, v
  integer, allocatable :: ranks(:), out(:)
  logical :: flag

  nfail = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  color = mod(rank, 2)
  nevens = (np + 1) / 2
  nlocal = nevens
  nremote = np / 2
  if (color == 1) then
    nlocal = np / 2
    nremote = nevens
  end if

  call MPI_COMM_SPLIT(MPI_COMM_WORLD, color, rank, local, ierr)
  call MPI_COMM_TEST_INTER(local, flag, ierr)
  call expect(ierr == MPI_SUCCESS .and. .not. flag, 'test_inter on an intracomm')
  if (np >= 2) then
    ! leaders: local rank 0 (world 0 and world 1); the peer is the world
    call MPI_INTERCOMM_CREATE(local, 0, MPI_COMM_WORLD, 1 - color, 99, inter, ierr)
    call expect(ierr == MPI_SUCCESS, 'intercomm_create')
    call MPI_COMM_TEST_INTER(inter, flag, ierr)
    call expect(flag, 'test_inter')
    call MPI_COMM_SIZE(inter, sz, ierr)
    call MPI_COMM_RANK(inter, r, ierr)
    call expect(sz == nlocal .and. r == rank / 2, 'intercomm local size/rank')
    call MPI_COMM_REMOTE_SIZE(inter, sz, ierr)
    call expect(sz == nremote, 'remote_size')
    ! the remote group is the other parity in world order
    call MPI_COMM_REMOTE_GROUP(inter, rgroup, ierr)
    call MPI_COMM_GROUP(MPI_COMM_WORLD, wgroup, ierr)
    allocate(ranks(nremote), out(nremote))
    ranks = [(i, i = 0, nremote - 1)]
    call MPI_GROUP_TRANSLATE_RANKS(rgroup, nremote, ranks, wgroup, out, ierr)
    call expect(all(out == [(2 * i + 1 - color, i = 0, nremote - 1)]), 'remote group')
    call MPI_GROUP_FREE(rgroup, ierr)
    call MPI_GROUP_FREE(wgroup, ierr)

    ! ALLREDUCE: each side receives the sum over the other group
    call MPI_ALLREDUCE(rank + 1, s, 1, MPI_INTEGER, MPI_SUM, inter, ierr)
    k = 0
    do i = 1 - color, np - 1, 2
      k = k + i + 1
    end do
    call expect(ierr == MPI_SUCCESS .and. s == k, 'allreduce across the groups')

    ! BCAST from the odds' rank 0 (world rank 1) to the evens
    if (color == 1) then
      root = MPI_PROC_NULL
      if (rank == 1) root = MPI_ROOT
      v = 4242
    else
      root = 0
      v = -1
    end if
    call MPI_BCAST(v, 1, MPI_INTEGER, root, inter, ierr)
    call expect(v == 4242, 'intercomm bcast')

    call MPI_COMM_DUP(inter, inter2, ierr)
    call MPI_COMM_COMPARE(inter, inter2, cres, ierr)
    call expect(cres == MPI_CONGRUENT, 'dup of the intercomm: congruent')
    call MPI_COMM_TEST_INTER(inter2, flag, ierr)
    call expect(flag, 'dup is an intercomm')
    call MPI_COMM_FREE(inter2, ierr)

    ! MERGE: the evens low, the odds high
    call MPI_INTERCOMM_MERGE(inter, color == 1, merged, ierr)
    call expect(ierr == MPI_SUCCESS, 'intercomm_merge')
    call MPI_COMM_SIZE(merged, sz, ierr)
    call MPI_COMM_RANK(merged, r, ierr)
    k = rank / 2
    if (color == 1) k = nevens + rank / 2
    call expect(sz == np .and. r == k, 'merged size/rank (low group first)')
    call MPI_COMM_TEST_INTER(merged, flag, ierr)
    call expect(.not. flag, 'merged is an intracomm')
    call MPI_ALLREDUCE(rank, s, 1, MPI_INTEGER, MPI_SUM, merged, ierr)
    call expect(s == np * (np - 1) / 2, 'allreduce on merged')
    call MPI_COMM_COMPARE(merged, MPI_COMM_WORLD, cres, ierr)
    if (np <= 2) then
      call expect(cres == MPI_CONGRUENT, 'merged vs world (same order)')
    else
      call expect(cres == MPI_SIMILAR, 'merged vs world: similar')
    end if
    ! merged again with every HIGH false: the group whose leader is world rank 0 first
    call MPI_COMM_FREE(merged, ierr)
    call MPI_INTERCOMM_MERGE(inter, .false., merged, ierr)
    call MPI_COMM_SIZE(merged, sz, ierr)
    call expect(ierr == MPI_SUCCESS .and. sz == np, 'merge with equal HIGH')
    call MPI_COMM_FREE(merged, ierr)
    call MPI_COMM_FREE(inter, ierr)
    call expect(inter == MPI_COMM_NULL, 'free intercomm')
  end if
  call MPI_COMM_FREE(local, ierr)

  call MPI_ALLREDUCE(nfail, k, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (k /= 0) call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
  call MPI_FINALIZE(ierr)
  if (rank == 0) print *, 'intercomm: OK on', np, 'ranks'

contains
  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      print *, 'FAIL rank', rank, ': ', what
      nfail = nfail + 1
    end if
  end subroutine expect
end program intercomm
