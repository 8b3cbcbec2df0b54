! Communicators and groups through `use mpi`, checked against orders computed
! here: COMM_DUP, COMM_IDUP, COMM_DUP_WITH_INFO, COMM_COMPARE, COMM_SPLIT (reversed keys,
! MPI_UNDEFINED), COMM_SPLIT_TYPE, COMM_GROUP, GROUP_SIZE/RANK, GROUP_INCL/EXCL,
! GROUP_RANGE_INCL/RANGE_EXCL with INTEGER(3,N) ranges, GROUP_UNION/
! INTERSECTION/DIFFERENCE, GROUP_TRANSLATE_RANKS, GROUP_COMPARE, COMM_CREATE,
! COMM_CREATE_GROUP, GROUP_FREE, COMM_FREE.
program comm_groups
  use mpi
  implicit none
  integer :: rank, np, ierr, nfail, k, i, n, cres, sz, r, s
  integer :: dup, dupi, idup, ireq, half, none, shared, evcomm, oddcomm
  integer :: wgroup, grev, gexcl, grange, godds, gevens, gunion, ginter, gdiff, gsplit
  integer :: ranges(3, 2), nr
  integer, allocatable :: ranks(:), out(:), list(:)

  nfail = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  allocate(ranks(np), out(np), list(np))

  ! ---- COMM_DUP / COMM_COMPARE
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  call expect(ierr == MPI_SUCCESS .and. dup /= MPI_COMM_WORLD, 'comm_dup')
  call MPI_COMM_COMPARE(MPI_COMM_WORLD, dup, cres, ierr)
  call expect(cres == MPI_CONGRUENT, 'compare world/dup: congruent')
  call MPI_COMM_COMPARE(dup, dup, cres, ierr)
  call expect(cres == MPI_IDENT, 'compare dup/dup: ident')
  call MPI_COMM_RANK(dup, r, ierr)
  call MPI_COMM_SIZE(dup, sz, ierr)
  call expect(r == rank .and. sz == np, 'dup rank/size')
  call MPI_ALLREDUCE(rank, s, 1, MPI_INTEGER, MPI_SUM, dup, ierr)
  call expect(s == np * (np - 1) / 2, 'allreduce on the dup')
  call MPI_COMM_DUP_WITH_INFO(dup, MPI_INFO_NULL, dupi, ierr)
  call MPI_COMM_COMPARE(dup, dupi, cres, ierr)
  call expect(ierr == MPI_SUCCESS .and. cres == MPI_CONGRUENT, 'comm_dup_with_info')
  call MPI_COMM_IDUP(dup, idup, ireq, ierr)
  call MPI_WAIT(ireq, MPI_STATUS_IGNORE, ierr)
  call MPI_COMM_COMPARE(dup, idup, cres, ierr)
  call expect(ierr == MPI_SUCCESS .and. cres == MPI_CONGRUENT .and. ireq == MPI_REQUEST_NULL, 'comm_idup')
  call MPI_ALLREDUCE(rank, s, 1, MPI_INTEGER, MPI_SUM, idup, ierr)
  call expect(s == np * (np - 1) / 2, 'allreduce on the idup')
  call MPI_COMM_FREE(idup, ierr)

  ! ---- COMM_SPLIT by parity, keys reversing the order
  call MPI_COMM_SPLIT(MPI_COMM_WORLD, mod(rank, 2), -rank, half, ierr)
  call MPI_COMM_SIZE(half, sz, ierr)
  call MPI_COMM_RANK(half, r, ierr)
  n = 0
  k = 0
  do i = 0, np - 1
    if (mod(i, 2) == mod(rank, 2)) then
      n = n + 1
      if (i > rank) k = k + 1
    end if
  end do
  call expect(sz == n .and. r == k, 'split size/rank (reversed keys)')
  call MPI_ALLREDUCE(rank, s, 1, MPI_INTEGER, MPI_SUM, half, ierr)
  k = 0
  do i = mod(rank, 2), np - 1, 2
    k = k + i
  end do
  call expect(s == k, 'allreduce on the split')
  call MPI_COMM_COMPARE(MPI_COMM_WORLD, half, cres, ierr)
  if (np == 1) then
    call expect(cres == MPI_CONGRUENT, 'compare world/split np=1')
  else
    call expect(cres == MPI_UNEQUAL, 'compare world/split')
  end if
  ! MPI_UNDEFINED colour on rank 0: MPI_COMM_NULL there
  k = 1
  if (rank == 0) k = MPI_UNDEFINED
  call MPI_COMM_SPLIT(MPI_COMM_WORLD, k, rank, none, ierr)
  if (rank == 0) then
    call expect(none == MPI_COMM_NULL, 'split with MPI_UNDEFINED')
  else
    call MPI_COMM_SIZE(none, sz, ierr)
    call expect(sz == np - 1, 'split without rank 0')
    call MPI_COMM_FREE(none, ierr)
  end if
  call MPI_COMM_SPLIT_TYPE(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, shared, ierr)
  call MPI_COMM_SIZE(shared, sz, ierr)
  call expect(ierr == MPI_SUCCESS .and. sz == np, 'split_type shared: one node')
  call MPI_COMM_FREE(shared, ierr)

  ! ---- groups
  call MPI_COMM_GROUP(MPI_COMM_WORLD, wgroup, ierr)
  call MPI_GROUP_SIZE(wgroup, sz, ierr)
  call MPI_GROUP_RANK(wgroup, r, ierr)
  call expect(sz == np .and. r == rank, 'world group size/rank')
  ! reversed
  ranks = [(np - 1 - i, i = 0, np - 1)]
  call MPI_GROUP_INCL(wgroup, np, ranks, grev, ierr)
  call MPI_GROUP_RANK(grev, r, ierr)
  call expect(r == np - 1 - rank, 'group_incl reversed: rank')
  list = [(i, i = 0, np - 1)]
  call MPI_GROUP_TRANSLATE_RANKS(grev, np, list, wgroup, out, ierr)
  call expect(all(out == ranks), 'translate reversed -> world')
  call MPI_GROUP_COMPARE(grev, wgroup, cres, ierr)
  if (np == 1) then
    call expect(cres == MPI_IDENT, 'group compare np=1')
  else
    call expect(cres == MPI_SIMILAR, 'group compare reversed: similar')
  end if
  ! exclude rank 0
  call MPI_GROUP_EXCL(wgroup, 1, [0], gexcl, ierr)
  call MPI_GROUP_SIZE(gexcl, sz, ierr)
  call MPI_GROUP_RANK(gexcl, r, ierr)
  if (rank == 0) then
    call expect(sz == np - 1 .and. r == MPI_UNDEFINED, 'group_excl on rank 0')
  else
    call expect(sz == np - 1 .and. r == rank - 1, 'group_excl')
  end if
  ! ranges: the evens ascending, then the odds descending (a 3 x N array)
  nr = 1
  ranges(:, 1) = [0, np - 1, 2]
  if (np >= 2) then
    nr = 2
    k = np - 1
    if (mod(k, 2) == 0) k = k - 1
    ranges(:, 2) = [k, 1, -2]
  end if
  n = 0
  do i = 0, np - 1, 2
    n = n + 1
    list(n) = i
  end do
  do i = np - 1, 1, -1
    if (mod(i, 2) == 1) then
      n = n + 1
      list(n) = i
    end if
  end do
  call MPI_GROUP_RANGE_INCL(wgroup, nr, ranges, grange, ierr)
  call MPI_GROUP_SIZE(grange, sz, ierr)
  call MPI_GROUP_RANK(grange, r, ierr)
  call expect(ierr == MPI_SUCCESS .and. sz == np, 'range_incl size')
  call expect(list(r + 1) == rank, 'range_incl rank')
  ranks = [(i, i = 0, np - 1)]
  call MPI_GROUP_TRANSLATE_RANKS(grange, np, ranks, wgroup, out, ierr)
  call expect(all(out == list), 'range_incl order')
  ! the odds: the world without the evens range
  call MPI_GROUP_RANGE_EXCL(wgroup, 1, ranges, godds, ierr)
  call MPI_GROUP_SIZE(godds, sz, ierr)
  call MPI_GROUP_RANK(godds, r, ierr)
  call expect(sz == np / 2, 'range_excl size')
  if (mod(rank, 2) == 1) then
    call expect(r == rank / 2, 'range_excl rank')
  else
    call expect(r == MPI_UNDEFINED, 'range_excl rank (excluded)')
  end if
  call MPI_GROUP_RANGE_INCL(wgroup, 1, ranges, gevens, ierr)
  ! union: evens then odds ascending; intersection/difference keep world order
  call MPI_GROUP_UNION(gevens, godds, gunion, ierr)
  call MPI_GROUP_SIZE(gunion, sz, ierr)
  call expect(sz == np, 'union size')
  n = 0
  do i = 0, np - 1, 2
    n = n + 1
    list(n) = i
  end do
  do i = 1, np - 1, 2
    n = n + 1
    list(n) = i
  end do
  call MPI_GROUP_TRANSLATE_RANKS(gunion, np, ranks, wgroup, out, ierr)
  call expect(all(out == list), 'union order')
  call MPI_GROUP_INTERSECTION(wgroup, godds, ginter, ierr)
  call MPI_GROUP_DIFFERENCE(wgroup, gevens, gdiff, ierr)
  call MPI_GROUP_COMPARE(ginter, gdiff, cres, ierr)
  call expect(cres == MPI_IDENT, 'intersection == difference')
  call MPI_GROUP_COMPARE(ginter, godds, cres, ierr)
  call expect(cres == MPI_IDENT, 'intersection == odds')
  call MPI_GROUP_SIZE(ginter, sz, ierr)
  call expect(sz == np / 2, 'intersection size')
  ! rank 0 of each half is translated to world ranks 0 and 1; MPI_PROC_NULL passes
  call MPI_COMM_GROUP(half, gsplit, ierr)
  call MPI_GROUP_TRANSLATE_RANKS(gsplit, 2, [0, MPI_PROC_NULL], wgroup, out, ierr)
  k = np - 1
  if (mod(k, 2) /= mod(rank, 2)) k = k - 1
  call expect(out(1) == k .and. out(2) == MPI_PROC_NULL, 'translate split rank 0')

  ! ---- COMM_CREATE (collective over the world) and COMM_CREATE_GROUP (the odds)
  call MPI_COMM_CREATE(MPI_COMM_WORLD, gevens, evcomm, ierr)
  call expect(ierr == MPI_SUCCESS, 'comm_create')
  if (mod(rank, 2) == 0) then
    call MPI_COMM_SIZE(evcomm, sz, ierr)
    call MPI_COMM_RANK(evcomm, r, ierr)
    call expect(sz == (np + 1) / 2 .and. r == rank / 2, 'comm_create size/rank')
    call MPI_ALLREDUCE(rank, s, 1, MPI_INTEGER, MPI_MAX, evcomm, ierr)
    k = np - 1
    if (mod(k, 2) == 1) k = k - 1
    call expect(s == k, 'allreduce on created comm')
    call MPI_COMM_FREE(evcomm, ierr)
    call expect(evcomm == MPI_COMM_NULL, 'comm_free -> MPI_COMM_NULL')
  else
    call expect(evcomm == MPI_COMM_NULL, 'comm_create outside the group')
    call MPI_COMM_CREATE_GROUP(MPI_COMM_WORLD, godds, 7, oddcomm, ierr)
    call MPI_COMM_SIZE(oddcomm, sz, ierr)
    call MPI_COMM_RANK(oddcomm, r, ierr)
    call expect(ierr == MPI_SUCCESS .and. sz == np / 2 .and. r == rank / 2, 'comm_create_group')
    call MPI_COMM_COMPARE(oddcomm, half, cres, ierr)
    if (np / 2 == 1) then
      call expect(cres == MPI_CONGRUENT, 'create_group vs split (one member)')
    else
      call expect(cres == MPI_SIMILAR, 'create_group vs split: similar')
    end if
    call MPI_COMM_FREE(oddcomm, ierr)
  end if

  call MPI_GROUP_FREE(grev, ierr)
  call MPI_GROUP_FREE(gexcl, ierr)
  call MPI_GROUP_FREE(grange, ierr)
  call MPI_GROUP_FREE(godds, ierr)
  call MPI_GROUP_FREE(gevens, ierr)
  call MPI_GROUP_FREE(gunion, ierr)
  call MPI_GROUP_FREE(ginter, ierr)
  call MPI_GROUP_FREE(gdiff, ierr)
  call MPI_GROUP_FREE(gsplit, ierr)
  call MPI_GROUP_FREE(wgroup, ierr)
  call expect(ierr == MPI_SUCCESS .and. wgroup == MPI_GROUP_NULL, 'group_free -> MPI_GROUP_NULL')
  call MPI_COMM_FREE(half, ierr)
  call MPI_COMM_FREE(dupi, ierr)
  call MPI_COMM_FREE(dup, ierr)
  call expect(ierr == MPI_SUCCESS .and. dup == MPI_COMM_NULL, 'comm_free dup')

  call MPI_ALLREDUCE(nfail, k, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (k /= 0) call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
  call MPI_FINALIZE(ierr)
  if (rank == 0) print *, 'comm_groups: OK on', np, 'ranks'

contains
  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      print *, 'FAIL rank', rank, ': ', what
      nfail = nfail + 1
    end if
  end subroutine expect
end program comm_groups
