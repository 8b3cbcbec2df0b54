! One-sided communication (MPI 4.1 chapter 12) from Fortran with `use mpi`, every result
! checked against values computed here:
!  - MPI_WIN_ALLOCATE with an INTEGER(KIND=MPI_ADDRESS_KIND) base address (integers) and
!    with a TYPE(C_PTR) one turned into a REAL(8) array by C_F_POINTER;
!  - MPI_WIN_CREATE on an array, MPI_WIN_ALLOCATE_SHARED with MPI_WIN_SHARED_QUERY
!    (TYPE(C_PTR)) and loads and stores into the other processes' segments,
!    MPI_WIN_CREATE_DYNAMIC with MPI_WIN_ATTACH / MPI_WIN_DETACH;
!  - MPI_PUT, MPI_GET, MPI_ACCUMULATE, MPI_GET_ACCUMULATE, MPI_FETCH_AND_OP on INTEGER and
!    DOUBLE PRECISION, MPI_COMPARE_AND_SWAP on INTEGER (the standard does not define it
!    for floating point), MPI_ACCUMULATE of MPI_2DOUBLE_PRECISION pairs with MPI_MAXLOC
!    (ties take the lower index), MPI_RPUT / MPI_RGET completed by MPI_WAIT;
!  - fences, post/start/complete/wait, lock/unlock, lock_all/flush/unlock_all;
!  - MPI_WIN_GET_ATTR (MPI_WIN_BASE, MPI_WIN_SIZE, MPI_WIN_DISP_UNIT,
!    MPI_WIN_CREATE_FLAVOR, MPI_WIN_MODEL), MPI_WIN_SET_NAME / MPI_WIN_GET_NAME (empty
!    before a name is set), MPI_WIN_GET_GROUP;
!  - under MPI_ERRORS_RETURN set by MPI_WIN_SET_ERRHANDLER, a put beyond the end of a
!    window and one to memory no longer attached to a dynamic window give the error class
!    MPI_ERR_RMA_RANGE. The argument `norange` leaves this part out (MPICH 4.0.2 does
!    not detect either error: it performs the put).
! Concurrent fetching operations on one location (fetch-and-op, get-accumulate) are
! checked as a chain: sorted, the values fetched must be the running sums of the
! contributions in some order, and the location ends with the total.
! Window memory the program loads and stores directly is either memory MPI returned
! (reached through pointers) or module data whose address was given to MPI, so the
! compiler cannot keep it in registers across MPI calls (MPI 4.1 section 19.1.17).
module rma_bufs
  implicit none
  integer, parameter :: maxnp = 64
  integer, target :: carr(0:maxnp-1)
  integer, target :: dyn(4)
end module rma_bufs

module rma_check
  use mpi
  use rma_bufs, only: maxnp
  implicit none
  integer :: errs = 0, rank = 0, nprocs = 1, left = 0, right = 0
  logical :: do_range = .true.
contains
  subroutine check_i(what, idx, got, want)
    character(len=*), intent(in) :: what
    integer, intent(in) :: idx, got, want
    if (got /= want) then
      errs = errs + 1
      if (errs <= 20) print '(a,i0,3a,i0,a,i0,a,i0)', 'rank ', rank, ': ', what, &
        ' index ', idx, ': got ', got, ' expected ', want
    end if
  end subroutine check_i

  subroutine check_a(what, got, want)
    character(len=*), intent(in) :: what
    integer(kind=MPI_ADDRESS_KIND), intent(in) :: got, want
    if (got /= want) then
      errs = errs + 1
      if (errs <= 20) print '(a,i0,3a,i0,a,i0)', 'rank ', rank, ': ', what, &
        ': got ', got, ' expected ', want
    end if
  end subroutine check_a

  subroutine check_d(what, idx, got, want)
    character(len=*), intent(in) :: what
    integer, intent(in) :: idx
    double precision, intent(in) :: got, want
    if (got /= want) then
      errs = errs + 1
      if (errs <= 20) print '(a,i0,3a,i0,a,g0,a,g0)', 'rank ', rank, ': ', what, &
        ' index ', idx, ': got ', got, ' expected ', want
    end if
  end subroutine check_d

  subroutine check_ok(what, ierr)
    character(len=*), intent(in) :: what
    integer, intent(in) :: ierr
    if (ierr /= MPI_SUCCESS) then
      errs = errs + 1
      if (errs <= 20) print '(a,i0,3a,i0)', 'rank ', rank, ': ', what, ' ierr ', ierr
    end if
  end subroutine check_ok

  ! An error code must be of class `want` (MPI_SUCCESS is a failure).
  subroutine check_class(what, ierr, want)
    character(len=*), intent(in) :: what
    integer, intent(in) :: ierr, want
    integer :: cls, e
    if (ierr == MPI_SUCCESS) then
      errs = errs + 1
      if (errs <= 20) print '(a,i0,3a,i0)', 'rank ', rank, ': ', what, &
        ' succeeded; expected error class ', want
      return
    end if
    call MPI_ERROR_CLASS(ierr, cls, e)
    call check_i(what // ' error class', 0, cls, want)
  end subroutine check_class

  ! The attributes every window has: the size and the flavor exactly, the base address
  ! and the displacement unit when not negative (a dynamic window's base is MPI_BOTTOM,
  ! its displacement unit unspecified), and a memory model that is one of the two.
  subroutine check_attrs(what, win, base, size, disp_unit, flavor)
    character(len=*), intent(in) :: what
    integer, intent(in) :: win, disp_unit, flavor
    integer(kind=MPI_ADDRESS_KIND), intent(in) :: base, size
    integer(kind=MPI_ADDRESS_KIND) :: val
    logical :: flag
    integer :: ierr
    call MPI_WIN_GET_ATTR(win, MPI_WIN_BASE, val, flag, ierr)
    call check_i(what // ' MPI_WIN_BASE flag', 0, merge(1, 0, flag), 1)
    if (base >= 0) call check_a(what // ' MPI_WIN_BASE', val, base)
    call MPI_WIN_GET_ATTR(win, MPI_WIN_SIZE, val, flag, ierr)
    call check_i(what // ' MPI_WIN_SIZE flag', 0, merge(1, 0, flag), 1)
    call check_a(what // ' MPI_WIN_SIZE', val, size)
    call MPI_WIN_GET_ATTR(win, MPI_WIN_DISP_UNIT, val, flag, ierr)
    call check_i(what // ' MPI_WIN_DISP_UNIT flag', 0, merge(1, 0, flag), 1)
    if (disp_unit >= 0) call check_a(what // ' MPI_WIN_DISP_UNIT', val, &
      int(disp_unit, MPI_ADDRESS_KIND))
    call MPI_WIN_GET_ATTR(win, MPI_WIN_CREATE_FLAVOR, val, flag, ierr)
    call check_i(what // ' MPI_WIN_CREATE_FLAVOR flag', 0, merge(1, 0, flag), 1)
    call check_a(what // ' MPI_WIN_CREATE_FLAVOR', val, int(flavor, MPI_ADDRESS_KIND))
    call MPI_WIN_GET_ATTR(win, MPI_WIN_MODEL, val, flag, ierr)
    call check_i(what // ' MPI_WIN_MODEL flag', 0, merge(1, 0, flag), 1)
    if (val /= MPI_WIN_UNIFIED .and. val /= MPI_WIN_SEPARATE) then
      call check_a(what // ' MPI_WIN_MODEL (MPI_WIN_UNIFIED)', val, &
        int(MPI_WIN_UNIFIED, MPI_ADDRESS_KIND))
    end if
  end subroutine check_attrs

  ! Rank 0 receives every rank's (fetched, contribution) pair and checks the chain: the
  ! fetched values, sorted, start at `init`, each is the previous one plus the
  ! contribution of the rank that fetched the previous one, and `final` (the location's
  ! value after all of them) is the last one plus its contribution.
  subroutine check_chain(what, fetched, contrib, init, final)
    character(len=*), intent(in) :: what
    double precision, intent(in) :: fetched, contrib, init, final
    double precision :: mine(2), all(2, maxnp), t(2), run
    integer :: i, j, ierr
    mine = [fetched, contrib]
    call MPI_GATHER(mine, 2, MPI_DOUBLE_PRECISION, all, 2, MPI_DOUBLE_PRECISION, 0, &
      MPI_COMM_WORLD, ierr)
    if (rank /= 0) return
    do i = 2, nprocs
      t = all(:, i)
      j = i - 1
      do while (j >= 1)
        if (all(1, j) <= t(1)) exit
        all(:, j + 1) = all(:, j)
        j = j - 1
      end do
      all(:, j + 1) = t
    end do
    run = init
    do i = 1, nprocs
      call check_d(what // ' fetched value (sorted)', i, all(1, i), run)
      run = run + all(2, i)
    end do
    call check_d(what // ' final value', 0, final, run)
  end subroutine check_chain
end module rma_check

module rma_sections
  use mpi
  use iso_c_binding
  use rma_check
  use rma_bufs
  implicit none
contains
  ! MPI_WIN_ALLOCATE, INTEGER(KIND=MPI_ADDRESS_KIND) base; n integers, disp_unit 4.
  subroutine allocate_int()
    integer, parameter :: n = 16
    integer(kind=MPI_ADDRESS_KIND) :: baseptr, a0
    type(c_ptr) :: cp
    integer, pointer :: w(:)
    integer :: win, ierr, i, r, src(4), g4(4), wgroup, g, cmp, res, fetched, lenname
    integer :: cas(2), allcas(2, maxnp), winner, nwin
    integer :: req, status(MPI_STATUS_SIZE)
    character(len=MPI_MAX_OBJECT_NAME) :: name

    a0 = 0
    call MPI_WIN_ALLOCATE(int(4 * n, MPI_ADDRESS_KIND), 4, MPI_INFO_NULL, &
      MPI_COMM_WORLD, baseptr, win, ierr)
    call check_ok('MPI_WIN_ALLOCATE (address)', ierr)
    cp = transfer(baseptr, cp)
    call c_f_pointer(cp, w, [n])
    call check_attrs('allocate', win, baseptr, int(4 * n, MPI_ADDRESS_KIND), 4, &
      MPI_WIN_FLAVOR_ALLOCATE)

    name = 'x'
    call MPI_WIN_GET_NAME(win, name, lenname, ierr)
    call check_ok('MPI_WIN_GET_NAME', ierr)
    call check_i('unnamed window: name length', 0, lenname, 0)
    call check_i('unnamed window: name blank', 0, len_trim(name), 0)
    call MPI_WIN_SET_NAME(win, 'rma allocate window', ierr)
    call check_ok('MPI_WIN_SET_NAME', ierr)
    call MPI_WIN_GET_NAME(win, name, lenname, ierr)
    call check_i('window name length', 0, lenname, len('rma allocate window'))
    if (name /= 'rma allocate window') then
      errs = errs + 1
      print '(a,i0,3a)', 'rank ', rank, ': window name "', trim(name), &
        '" expected "rma allocate window"'
    end if

    call MPI_WIN_GET_GROUP(win, g, ierr)
    call check_ok('MPI_WIN_GET_GROUP', ierr)
    call MPI_COMM_GROUP(MPI_COMM_WORLD, wgroup, ierr)
    call MPI_GROUP_COMPARE(g, wgroup, cmp, ierr)
    call check_i('MPI_WIN_GET_GROUP compared with MPI_COMM_WORLD''s', 0, cmp, MPI_IDENT)
    call MPI_GROUP_FREE(g, ierr)
    call MPI_GROUP_FREE(wgroup, ierr)

    do i = 1, n
      w(i) = rank * 100 + i
    end do
    call MPI_WIN_FENCE(0, win, ierr)
    call check_ok('MPI_WIN_FENCE', ierr)
    ! put w(1:4) of the right neighbour, get w(5:8) of the left one
    do i = 1, 4
      src(i) = rank * 1000 + i
    end do
    g4 = -1
    call MPI_PUT(src, 4, MPI_INTEGER, right, a0, 4, MPI_INTEGER, win, ierr)
    call check_ok('MPI_PUT', ierr)
    call MPI_GET(g4, 4, MPI_INTEGER, left, 4_MPI_ADDRESS_KIND, 4, MPI_INTEGER, win, ierr)
    call check_ok('MPI_GET', ierr)
    call MPI_WIN_FENCE(0, win, ierr)
    do i = 1, 4
      call check_i('fence: put from the left', i, w(i), left * 1000 + i)
      call check_i('fence: get from the left', i, g4(i), left * 100 + 4 + i)
    end do
    ! (not rank 0's w(9:12): the others may already be accumulating there)
    do i = 5, n
      if (rank /= 0 .or. i < 9 .or. i > 12) &
        call check_i('fence: untouched', i, w(i), rank * 100 + i)
    end do
    ! everybody adds (rank+1)*i into w(9:12) of rank 0
    do i = 1, 4
      src(i) = (rank + 1) * i
    end do
    call MPI_ACCUMULATE(src, 4, MPI_INTEGER, 0, 8_MPI_ADDRESS_KIND, 4, MPI_INTEGER, &
      MPI_SUM, win, ierr)
    call check_ok('MPI_ACCUMULATE', ierr)
    call MPI_WIN_FENCE(MPI_MODE_NOSUCCEED, win, ierr)
    if (rank == 0) then
      do i = 1, 4
        call check_i('fence: MPI_ACCUMULATE MPI_SUM', i, w(8 + i), &
          8 + i + i * nprocs * (nprocs + 1) / 2)
      end do
    end if

    ! passive target: compare-and-swap on w(13) of rank 0 (one winner), then
    ! fetch-and-add of rank+1 on w(14)
    call MPI_WIN_LOCK_ALL(0, win, ierr)
    call check_ok('MPI_WIN_LOCK_ALL', ierr)
    res = -1
    call MPI_COMPARE_AND_SWAP(rank + 1, 13, res, MPI_INTEGER, 0, 12_MPI_ADDRESS_KIND, &
      win, ierr)
    call check_ok('MPI_COMPARE_AND_SWAP', ierr)
    call MPI_WIN_FLUSH(0, win, ierr)
    call check_ok('MPI_WIN_FLUSH', ierr)
    fetched = -1
    call MPI_FETCH_AND_OP(rank + 1, fetched, MPI_INTEGER, 0, 13_MPI_ADDRESS_KIND, &
      MPI_SUM, win, ierr)
    call check_ok('MPI_FETCH_AND_OP', ierr)
    call MPI_WIN_UNLOCK_ALL(win, ierr)
    call check_ok('MPI_WIN_UNLOCK_ALL', ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    cas = [res, 0]
    if (rank == 0) then
      call MPI_WIN_LOCK(MPI_LOCK_SHARED, 0, 0, win, ierr)
      cas(2) = w(13)
      r = w(14)
      call MPI_WIN_UNLOCK(0, win, ierr)
    end if
    call MPI_GATHER(cas, 2, MPI_INTEGER, allcas, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
      nwin = 0
      winner = -1
      do i = 1, nprocs
        if (allcas(1, i) == 13) then
          nwin = nwin + 1
          winner = i - 1
        end if
      end do
      call check_i('MPI_COMPARE_AND_SWAP: ranks that swapped', 0, nwin, 1)
      do i = 1, nprocs
        if (i - 1 /= winner) call check_i('MPI_COMPARE_AND_SWAP: fetched by a loser', &
          i - 1, allcas(1, i), winner + 1)
      end do
      call check_i('MPI_COMPARE_AND_SWAP: final value', 0, allcas(2, 1), winner + 1)
    end if
    call MPI_BCAST(r, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    call check_chain('MPI_FETCH_AND_OP MPI_INTEGER', dble(fetched), dble(rank + 1), &
      14d0, dble(r))

    ! request-based: MPI_RPUT into w(15:16) of the right neighbour, the origin buffer
    ! overwritten once MPI_WAIT returned; MPI_RGET of w(1:4) of the right neighbour
    call MPI_WIN_LOCK_ALL(0, win, ierr)
    src(1:2) = [-(rank + 1), -(rank + 1) * 2]
    call MPI_RPUT(src, 2, MPI_INTEGER, right, 14_MPI_ADDRESS_KIND, 2, MPI_INTEGER, win, &
      req, ierr)
    call check_ok('MPI_RPUT', ierr)
    call MPI_WAIT(req, status, ierr)
    call check_ok('MPI_WAIT (MPI_RPUT)', ierr)
    call check_i('MPI_WAIT (MPI_RPUT) request', 0, req, MPI_REQUEST_NULL)
    src = 77
    g4 = -1
    call MPI_RGET(g4, 4, MPI_INTEGER, right, a0, 4, MPI_INTEGER, win, req, ierr)
    call check_ok('MPI_RGET', ierr)
    call MPI_WAIT(req, status, ierr)
    call check_ok('MPI_WAIT (MPI_RGET)', ierr)
    do i = 1, 4
      call check_i('MPI_RGET from the right', i, g4(i), rank * 1000 + i)
    end do
    call MPI_WIN_UNLOCK_ALL(win, ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    call MPI_WIN_LOCK(MPI_LOCK_EXCLUSIVE, rank, 0, win, ierr)
    call check_i('MPI_RPUT from the left', 1, w(15), -(left + 1))
    call check_i('MPI_RPUT from the left', 2, w(16), -(left + 1) * 2)
    call MPI_WIN_UNLOCK(rank, win, ierr)

    if (do_range) then
      ! (everybody is done with the window's contents)
      call MPI_BARRIER(MPI_COMM_WORLD, ierr)
      call MPI_WIN_SET_ERRHANDLER(win, MPI_ERRORS_RETURN, ierr)
      call check_ok('MPI_WIN_SET_ERRHANDLER', ierr)
      call MPI_WIN_LOCK(MPI_LOCK_SHARED, right, 0, win, ierr)
      call MPI_PUT(src, 1, MPI_INTEGER, right, int(n, MPI_ADDRESS_KIND), 1, MPI_INTEGER, &
        win, ierr)
      call check_class('MPI_PUT past the end of the window', ierr, MPI_ERR_RMA_RANGE)
      call MPI_PUT(src, 2, MPI_INTEGER, right, int(n - 1, MPI_ADDRESS_KIND), 2, &
        MPI_INTEGER, win, ierr)
      call check_class('MPI_PUT across the end of the window', ierr, MPI_ERR_RMA_RANGE)
      call MPI_WIN_UNLOCK(right, win, ierr)
    end if

    call MPI_WIN_FREE(win, ierr)
    call check_ok('MPI_WIN_FREE', ierr)
    call check_i('MPI_WIN_FREE handle', 0, win, MPI_WIN_NULL)
  end subroutine allocate_int

  ! MPI_WIN_ALLOCATE, TYPE(C_PTR) base; 8 doubles, disp_unit 8:
  ! d(1:4) two MAXLOC pairs, d(5) get-accumulate chain, d(6) fetch-and-op chain,
  ! d(7:8) put / get.
  subroutine allocate_double()
    type(c_ptr) :: cp
    double precision, pointer :: d(:)
    double precision :: pairs(4), x, res, fres, fin(2), maxv
    integer :: win, ierr, first
    integer(kind=MPI_ADDRESS_KIND) :: a

    call MPI_WIN_ALLOCATE(64_MPI_ADDRESS_KIND, 8, MPI_INFO_NULL, MPI_COMM_WORLD, cp, win, &
      ierr)
    call check_ok('MPI_WIN_ALLOCATE (C_PTR)', ierr)
    call c_f_pointer(cp, d, [8])
    a = transfer(cp, a)
    call check_attrs('allocate C_PTR', win, a, 64_MPI_ADDRESS_KIND, 8, &
      MPI_WIN_FLAVOR_ALLOCATE)

    d = [-1d0, 99d0, -1d0, 99d0, 0.5d0, 0.25d0, rank + 0.5d0, rank + 0.75d0]
    call MPI_WIN_FENCE(MPI_MODE_NOPRECEDE, win, ierr)
    call MPI_PUT(rank + 0.125d0, 1, MPI_DOUBLE_PRECISION, right, 6_MPI_ADDRESS_KIND, 1, &
      MPI_DOUBLE_PRECISION, win, ierr)
    call check_ok('MPI_PUT (double)', ierr)
    x = -1
    call MPI_GET(x, 1, MPI_DOUBLE_PRECISION, left, 7_MPI_ADDRESS_KIND, 1, &
      MPI_DOUBLE_PRECISION, win, ierr)
    call check_ok('MPI_GET (double)', ierr)
    pairs = [dble(mod(rank, 3)), dble(rank), 5d0, dble(rank)]
    call MPI_ACCUMULATE(pairs, 2, MPI_2DOUBLE_PRECISION, 0, 0_MPI_ADDRESS_KIND, 2, &
      MPI_2DOUBLE_PRECISION, MPI_MAXLOC, win, ierr)
    call check_ok('MPI_ACCUMULATE MPI_2DOUBLE_PRECISION MPI_MAXLOC', ierr)
    call MPI_WIN_FENCE(MPI_MODE_NOSUCCEED, win, ierr)
    call check_d('fence: MPI_PUT double from the left', 7, d(7), left + 0.125d0)
    call check_d('fence: MPI_GET double from the left', 8, x, left + 0.75d0)
    call check_d('fence: untouched', 8, d(8), rank + 0.75d0)
    if (rank == 0) then
      maxv = dble(min(nprocs - 1, 2))
      first = min(nprocs - 1, 2)
      call check_d('MPI_MAXLOC value', 1, d(1), maxv)
      call check_d('MPI_MAXLOC location', 2, d(2), dble(first))
      call check_d('MPI_MAXLOC value (all equal)', 3, d(3), 5d0)
      call check_d('MPI_MAXLOC location (all equal: lowest)', 4, d(4), 0d0)
    end if

    ! get-accumulate of (rank+1)/2 on d(5) in exclusive lock epochs, fetch-and-op of
    ! (rank+1)/4 on d(6) under lock_all (sums exact in binary)
    res = -1
    call MPI_WIN_LOCK(MPI_LOCK_EXCLUSIVE, 0, 0, win, ierr)
    call check_ok('MPI_WIN_LOCK', ierr)
    call MPI_GET_ACCUMULATE((rank + 1) * 0.5d0, 1, MPI_DOUBLE_PRECISION, res, 1, &
      MPI_DOUBLE_PRECISION, 0, 4_MPI_ADDRESS_KIND, 1, MPI_DOUBLE_PRECISION, MPI_SUM, win, &
      ierr)
    call check_ok('MPI_GET_ACCUMULATE', ierr)
    call MPI_WIN_UNLOCK(0, win, ierr)
    call check_ok('MPI_WIN_UNLOCK', ierr)
    fres = -1
    call MPI_WIN_LOCK_ALL(0, win, ierr)
    call MPI_FETCH_AND_OP((rank + 1) * 0.25d0, fres, MPI_DOUBLE_PRECISION, 0, &
      5_MPI_ADDRESS_KIND, MPI_SUM, win, ierr)
    call check_ok('MPI_FETCH_AND_OP (double)', ierr)
    call MPI_WIN_FLUSH(0, win, ierr)
    call MPI_WIN_UNLOCK_ALL(win, ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    ! every rank reads the totals with fetching operations that do not modify them
    fin = -1
    call MPI_WIN_LOCK(MPI_LOCK_SHARED, 0, 0, win, ierr)
    call MPI_GET_ACCUMULATE(x, 0, MPI_DOUBLE_PRECISION, fin(1), 1, MPI_DOUBLE_PRECISION, &
      0, 4_MPI_ADDRESS_KIND, 1, MPI_DOUBLE_PRECISION, MPI_NO_OP, win, ierr)
    call check_ok('MPI_GET_ACCUMULATE MPI_NO_OP', ierr)
    call MPI_FETCH_AND_OP(x, fin(2), MPI_DOUBLE_PRECISION, 0, 5_MPI_ADDRESS_KIND, &
      MPI_NO_OP, win, ierr)
    call check_ok('MPI_FETCH_AND_OP MPI_NO_OP', ierr)
    call MPI_WIN_UNLOCK(0, win, ierr)
    call check_d('MPI_GET_ACCUMULATE total', 5, fin(1), &
      0.5d0 + 0.5d0 * nprocs * (nprocs + 1) / 2)
    call check_d('MPI_FETCH_AND_OP double total', 6, fin(2), &
      0.25d0 + 0.25d0 * nprocs * (nprocs + 1) / 2)
    call check_chain('MPI_GET_ACCUMULATE', res, (rank + 1) * 0.5d0, 0.5d0, fin(1))
    call check_chain('MPI_FETCH_AND_OP double', fres, (rank + 1) * 0.25d0, 0.25d0, fin(2))
    if (rank == 0) then
      call MPI_WIN_LOCK(MPI_LOCK_SHARED, 0, 0, win, ierr)
      call check_d('local load of the get-accumulate total', 5, d(5), fin(1))
      call check_d('local load of the fetch-and-op total', 6, d(6), fin(2))
      call MPI_WIN_UNLOCK(0, win, ierr)
    end if
    call MPI_WIN_FREE(win, ierr)
    call check_ok('MPI_WIN_FREE', ierr)
  end subroutine allocate_double

  ! MPI_WIN_CREATE on carr(0:nprocs-1), disp_unit 4; post/start/complete/wait with the
  ! neighbours, then with everybody.
  subroutine create_pscw()
    integer :: win, ierr, r, wgroup, gl, gr
    integer(kind=MPI_ADDRESS_KIND) :: a

    carr = -1
    call MPI_WIN_CREATE(carr, int(4 * nprocs, MPI_ADDRESS_KIND), 4, MPI_INFO_NULL, &
      MPI_COMM_WORLD, win, ierr)
    call check_ok('MPI_WIN_CREATE', ierr)
    call MPI_GET_ADDRESS(carr, a, ierr)
    call check_attrs('create', win, a, int(4 * nprocs, MPI_ADDRESS_KIND), 4, &
      MPI_WIN_FLAVOR_CREATE)
    call MPI_COMM_GROUP(MPI_COMM_WORLD, wgroup, ierr)
    call MPI_GROUP_INCL(wgroup, 1, [left], gl, ierr)
    call MPI_GROUP_INCL(wgroup, 1, [right], gr, ierr)

    call MPI_WIN_POST(gl, 0, win, ierr)
    call check_ok('MPI_WIN_POST', ierr)
    call MPI_WIN_START(gr, 0, win, ierr)
    call check_ok('MPI_WIN_START', ierr)
    call MPI_PUT(rank * 10 + 1, 1, MPI_INTEGER, right, int(rank, MPI_ADDRESS_KIND), 1, &
      MPI_INTEGER, win, ierr)
    call MPI_WIN_COMPLETE(win, ierr)
    call check_ok('MPI_WIN_COMPLETE', ierr)
    call MPI_WIN_WAIT(win, ierr)
    call check_ok('MPI_WIN_WAIT', ierr)
    do r = 0, nprocs - 1
      if (r == left) then
        call check_i('PSCW neighbours: from the left', r, carr(r), left * 10 + 1)
      else
        call check_i('PSCW neighbours: untouched', r, carr(r), -1)
      end if
    end do

    call MPI_WIN_POST(wgroup, 0, win, ierr)
    call MPI_WIN_START(wgroup, 0, win, ierr)
    do r = 0, nprocs - 1
      call MPI_PUT(rank * 10 + r, 1, MPI_INTEGER, r, int(rank, MPI_ADDRESS_KIND), 1, &
        MPI_INTEGER, win, ierr)
    end do
    call MPI_WIN_COMPLETE(win, ierr)
    call MPI_WIN_WAIT(win, ierr)
    do r = 0, nprocs - 1
      call check_i('PSCW everybody', r, carr(r), r * 10 + rank)
    end do

    call MPI_GROUP_FREE(gl, ierr)
    call MPI_GROUP_FREE(gr, ierr)
    call MPI_GROUP_FREE(wgroup, ierr)
    call MPI_WIN_FREE(win, ierr)
    call check_ok('MPI_WIN_FREE', ierr)
  end subroutine create_pscw

  ! MPI_WIN_ALLOCATE_SHARED on the shared-memory communicator: rank s owns s+1 doubles;
  ! the segments are contiguous (no alloc_shared_noncontig); every process loads the
  ! others' segments through MPI_WIN_SHARED_QUERY, then stores into its right
  ! neighbour's.
  subroutine allocate_shared()
    integer :: shm, srank, snp, win, ierr, r, i, du, sright, sleft
    integer(kind=MPI_ADDRESS_KIND) :: sz, a, a0, off
    type(c_ptr) :: cp, qp
    double precision, pointer :: own(:), other(:)

    call MPI_COMM_SPLIT_TYPE(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &
      shm, ierr)
    call check_ok('MPI_COMM_SPLIT_TYPE', ierr)
    call MPI_COMM_RANK(shm, srank, ierr)
    call MPI_COMM_SIZE(shm, snp, ierr)
    sright = mod(srank + 1, snp)
    sleft = mod(srank + snp - 1, snp)
    call MPI_WIN_ALLOCATE_SHARED(int(8 * (srank + 1), MPI_ADDRESS_KIND), 8, &
      MPI_INFO_NULL, shm, cp, win, ierr)
    call check_ok('MPI_WIN_ALLOCATE_SHARED', ierr)
    call c_f_pointer(cp, own, [srank + 1])
    a = transfer(cp, a)
    call check_attrs('allocate_shared', win, a, int(8 * (srank + 1), MPI_ADDRESS_KIND), &
      8, MPI_WIN_FLAVOR_SHARED)

    call MPI_WIN_LOCK_ALL(MPI_MODE_NOCHECK, win, ierr)
    do i = 1, srank + 1
      own(i) = srank * 1000 + i + 0.5d0
    end do
    call MPI_WIN_SYNC(win, ierr)
    call check_ok('MPI_WIN_SYNC', ierr)
    call MPI_BARRIER(shm, ierr)
    call MPI_WIN_SYNC(win, ierr)
    a0 = 0
    do r = 0, snp - 1
      sz = -1
      du = -1
      call MPI_WIN_SHARED_QUERY(win, r, sz, du, qp, ierr)
      call check_ok('MPI_WIN_SHARED_QUERY', ierr)
      call check_a('MPI_WIN_SHARED_QUERY size', sz, int(8 * (r + 1), MPI_ADDRESS_KIND))
      call check_i('MPI_WIN_SHARED_QUERY disp_unit', r, du, 8)
      a = transfer(qp, a)
      if (r == 0) a0 = a
      off = 8 * (r * (r + 1) / 2)
      call check_a('MPI_WIN_SHARED_QUERY address: contiguous segments', a, a0 + off)
      call c_f_pointer(qp, other, [r + 1])
      do i = 1, r + 1
        call check_d('load from a shared segment', r * 100 + i, other(i), &
          r * 1000 + i + 0.5d0)
      end do
    end do
    call MPI_WIN_SHARED_QUERY(win, MPI_PROC_NULL, sz, du, qp, ierr)
    call check_ok('MPI_WIN_SHARED_QUERY MPI_PROC_NULL', ierr)
    call check_a('MPI_WIN_SHARED_QUERY MPI_PROC_NULL size', sz, 8_MPI_ADDRESS_KIND)
    call check_a('MPI_WIN_SHARED_QUERY MPI_PROC_NULL address', transfer(qp, a), a0)
    call MPI_BARRIER(shm, ierr)
    call MPI_WIN_SHARED_QUERY(win, sright, sz, du, qp, ierr)
    call c_f_pointer(qp, other, [sright + 1])
    other(1) = -(srank + 1) * 0.5d0
    call MPI_WIN_SYNC(win, ierr)
    call MPI_BARRIER(shm, ierr)
    call MPI_WIN_SYNC(win, ierr)
    call check_d('store from the left neighbour', 1, own(1), -(sleft + 1) * 0.5d0)
    do i = 2, srank + 1
      call check_d('shared segment untouched', i, own(i), srank * 1000 + i + 0.5d0)
    end do
    call MPI_WIN_UNLOCK_ALL(win, ierr)
    call MPI_WIN_FREE(win, ierr)
    call check_ok('MPI_WIN_FREE', ierr)
    call MPI_COMM_FREE(shm, ierr)
  end subroutine allocate_shared

  ! MPI_WIN_CREATE_DYNAMIC: dyn(1:4) attached, addresses exchanged, put into the right
  ! neighbour's dyn(2:3), flush, get its dyn(1:4).
  subroutine dynamic()
    integer :: win, ierr, i, g(4), vals(2)
    integer(kind=MPI_ADDRESS_KIND) :: a, addrs(0:maxnp-1)

    call MPI_WIN_CREATE_DYNAMIC(MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
    call check_ok('MPI_WIN_CREATE_DYNAMIC', ierr)
    call check_attrs('create_dynamic', win, -1_MPI_ADDRESS_KIND, 0_MPI_ADDRESS_KIND, -1, &
      MPI_WIN_FLAVOR_DYNAMIC)
    call MPI_WIN_ATTACH(win, dyn, 16_MPI_ADDRESS_KIND, ierr)
    call check_ok('MPI_WIN_ATTACH', ierr)
    call MPI_GET_ADDRESS(dyn, a, ierr)
    call MPI_ALLGATHER(a, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD, ierr)
    call MPI_WIN_LOCK(MPI_LOCK_EXCLUSIVE, rank, 0, win, ierr)
    do i = 1, 4
      dyn(i) = rank * 10 + i
    end do
    call MPI_WIN_UNLOCK(rank, win, ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)

    call MPI_WIN_LOCK_ALL(0, win, ierr)
    vals = [rank * 10 + 7, rank * 10 + 8]
    call MPI_PUT(vals, 2, MPI_INTEGER, right, addrs(right) + 4, 2, MPI_INTEGER, win, ierr)
    call check_ok('MPI_PUT (dynamic)', ierr)
    call MPI_WIN_FLUSH(right, win, ierr)
    g = -1
    call MPI_GET(g, 4, MPI_INTEGER, right, addrs(right), 4, MPI_INTEGER, win, ierr)
    call check_ok('MPI_GET (dynamic)', ierr)
    call MPI_WIN_UNLOCK_ALL(win, ierr)
    call check_i('dynamic: get after flush', 1, g(1), right * 10 + 1)
    call check_i('dynamic: get after flush', 2, g(2), rank * 10 + 7)
    call check_i('dynamic: get after flush', 3, g(3), rank * 10 + 8)
    call check_i('dynamic: get after flush', 4, g(4), right * 10 + 4)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    call MPI_WIN_LOCK(MPI_LOCK_EXCLUSIVE, rank, 0, win, ierr)
    call check_i('dynamic: put from the left', 1, dyn(1), rank * 10 + 1)
    call check_i('dynamic: put from the left', 2, dyn(2), left * 10 + 7)
    call check_i('dynamic: put from the left', 3, dyn(3), left * 10 + 8)
    call check_i('dynamic: put from the left', 4, dyn(4), rank * 10 + 4)
    call MPI_WIN_UNLOCK(rank, win, ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    call MPI_WIN_DETACH(win, dyn, ierr)
    call check_ok('MPI_WIN_DETACH', ierr)
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)

    if (do_range) then
      call MPI_WIN_SET_ERRHANDLER(win, MPI_ERRORS_RETURN, ierr)
      call MPI_WIN_LOCK(MPI_LOCK_SHARED, right, 0, win, ierr)
      call MPI_PUT(vals, 1, MPI_INTEGER, right, addrs(right), 1, MPI_INTEGER, win, ierr)
      call check_class('MPI_PUT to detached memory', ierr, MPI_ERR_RMA_RANGE)
      call MPI_WIN_UNLOCK(right, win, ierr)
    end if
    call MPI_WIN_FREE(win, ierr)
    call check_ok('MPI_WIN_FREE', ierr)
  end subroutine dynamic
end module rma_sections

program rma
  use mpi
  use rma_check
  use rma_sections
  implicit none
  integer :: ierr, allerrs, i
  character(len=32) :: arg

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  do i = 1, command_argument_count()
    call get_command_argument(i, arg)
    if (arg == 'norange') do_range = .false.
  end do
  if (nprocs > maxnp) then
    if (rank == 0) print '(a,i0,a)', 'rma: at most ', maxnp, ' processes'
    call MPI_ABORT(MPI_COMM_WORLD, 2, ierr)
  end if
  left = mod(rank + nprocs - 1, nprocs)
  right = mod(rank + 1, nprocs)

  call allocate_int()
  call allocate_double()
  call create_pscw()
  call allocate_shared()
  call dynamic()

  call MPI_ALLREDUCE(errs, allerrs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (allerrs == 0) then
      print '(a)', ' No Errors'
    else
      print '(a,i0,a)', ' FAILED: ', allerrs, ' errors'
    end if
  end if
  call MPI_FINALIZE(ierr)
  if (allerrs /= 0) stop 1
end program rma
