! Coarray Fortran (gfortran -fcoarray=lib, OpenCoarrays' MPI library underneath: its
! coarrays are MPI windows, its puts and gets RMA, its locks, events and atomics
! fetch-and-op and compare-and-swap). Every image checks what it sees against values
! computed here and prints one line, the same on every correct MPI:
! "image I of N: K checks passed"; on a failure it prints what was expected and what
! was found and stops with a non-zero code.
! Covered: sync all, sync images (a pipeline), co_sum / co_max / co_min / co_broadcast
! (with and without result_image), scalar and array coarray puts and gets of whole
! arrays, strided sections and a column of a rank-2 coarray, an allocatable coarray,
! critical, lock / unlock of a lock_type coarray, event post / event wait / event_query,
! atomic_define / atomic_ref / atomic_add / atomic_cas.
module caf_check
  implicit none
  integer :: me = 0, nimg = 0, nchecks = 0, nfail = 0
contains
  subroutine check_i(what, idx, got, want)
    character(len=*), intent(in) :: what
    integer, intent(in) :: idx, got, want
    nchecks = nchecks + 1
    if (got /= want) then
      nfail = nfail + 1
      print '(a,i0,3a,i0,a,i0,a,i0)', 'image ', me, ': FAIL ', what, ' index ', idx, &
        ': got ', got, ' expected ', want
    end if
  end subroutine check_i

  subroutine check_d(what, idx, got, want)
    character(len=*), intent(in) :: what
    integer, intent(in) :: idx
    double precision, intent(in) :: got, want
    nchecks = nchecks + 1
    if (got /= want) then
      nfail = nfail + 1
      print '(a,i0,3a,i0,a,g0,a,g0)', 'image ', me, ': FAIL ', what, ' index ', idx, &
        ': got ', got, ' expected ', want
    end if
  end subroutine check_d
end module caf_check

program coarrays
  use, intrinsic :: iso_fortran_env, only: lock_type, event_type, atomic_int_kind
  use caf_check
  implicit none
  integer, parameter :: n = 10
  integer :: x(n)[*], b(n)[*], s[*], m(4, 3)[*], tok[*], counter[*], total[*]
  integer :: fromall(64)[*]
  double precision :: dv(3)[*]
  integer(atomic_int_kind) :: at[*], acas[*], aold, aval
  type(lock_type) :: lck[*], lck2[*]
  type(event_type) :: ev[*], ring[*]
  integer, allocatable :: z(:)[:]
  integer :: i, j, left, right, y(n), iv(3), cnt, want, bc(4), bwant(4)
  logical :: got
  double precision :: d(3)

  me = this_image()
  nimg = num_images()
  if (nimg > 64) error stop 'at most 64 images'
  left = merge(nimg, me - 1, me == 1)
  right = merge(1, me + 1, me == nimg)

  ! --- collectives
  iv = [me, 2 * me, -me]
  call co_sum(iv)
  call check_i('co_sum', 1, iv(1), nimg * (nimg + 1) / 2)
  call check_i('co_sum', 2, iv(2), nimg * (nimg + 1))
  call check_i('co_sum', 3, iv(3), -nimg * (nimg + 1) / 2)
  d = [me * 0.5d0, dble(mod(me * 7, 5)), -dble(me)]
  call co_max(d)
  call check_d('co_max', 1, d(1), nimg * 0.5d0)
  want = 0
  do i = 1, nimg
    want = max(want, mod(i * 7, 5))
  end do
  call check_d('co_max', 2, d(2), dble(want))
  call check_d('co_max', 3, d(3), -1d0)
  iv = [me, -me, 100 + me]
  call co_min(iv, result_image=1)
  if (me == 1) then
    call check_i('co_min result_image=1', 1, iv(1), 1)
    call check_i('co_min result_image=1', 2, iv(2), -nimg)
    call check_i('co_min result_image=1', 3, iv(3), 101)
  end if
  bc = [me, me * 10, me * 100, -me]
  call co_broadcast(bc, source_image=nimg)
  bwant = [nimg, nimg * 10, nimg * 100, -nimg]
  do i = 1, 4
    call check_i('co_broadcast from the last image', i, bc(i), bwant(i))
  end do

  ! --- puts and gets
  do i = 1, n
    x(i) = me * 100 + i
  end do
  b = -1
  s = me
  m = reshape([(me * 1000 + i, i = 1, 12)], [4, 3])
  sync all
  y = x(:)[right]
  do i = 1, n
    call check_i('whole-array get from the right', i, y(i), right * 100 + i)
  end do
  y = -7
  y(1:4) = x(1:n:3)[left]
  do i = 1, 4
    call check_i('strided get from the left', i, y(i), left * 100 + 1 + 3 * (i - 1))
  end do
  call check_i('scalar get from the left', 0, s[left], left)
  iv = m(2, :)[right]
  do j = 1, 3
    call check_i('row of a rank-2 coarray from the right', j, iv(j), &
      right * 1000 + 2 + 4 * (j - 1))
  end do
  ! puts: b(1:n:2) and m(:,3) of the right neighbour, s of the left one
  b(1:n:2)[right] = [(me * 10 + i, i = 1, n, 2)]
  m(:, 3)[right] = [-me, -2 * me, -3 * me, -4 * me]
  sync all
  s[left] = -me
  sync all
  do i = 1, n
    if (mod(i, 2) == 1) then
      call check_i('strided put from the left', i, b(i), left * 10 + i)
    else
      call check_i('strided put: gap untouched', i, b(i), -1)
    end if
  end do
  do i = 1, 4
    call check_i('column put from the left', i, m(i, 3), -left * i)
    call check_i('column 2 untouched', i, m(i, 2), me * 1000 + 4 + i)
  end do
  call check_i('scalar put from the right', 0, s, -right)
  dv = [me + 0.25d0, me + 0.5d0, me + 0.75d0]
  sync all
  d = dv(3:1:-1)[left]
  do i = 1, 3
    call check_d('reversed get of doubles from the left', i, d(i), left + (4 - i) * 0.25d0)
  end do

  ! --- an allocatable coarray (allocation and deallocation synchronise)
  allocate(z(nimg)[*])
  z = 0
  sync all
  z(me)[right] = me
  z(me)[left] = me
  sync all
  do i = 1, nimg
    if (i == left .or. i == right) then
      want = i
    else
      want = 0
    end if
    call check_i('allocatable coarray', i, z(i), want)
  end do
  deallocate(z)

  ! --- critical, locks
  counter = 0
  total = 0
  sync all
  critical
    counter[1] = counter[1] + 1
  end critical
  lock(lck[1])
  total[1] = total[1] + me
  unlock(lck[1])
  ! nobody else ever takes the right neighbour's lck2
  lock(lck2[right], acquired_lock=got)
  call check_i('lock acquired_lock= of a free lock', 0, merge(1, 0, got), 1)
  if (got) unlock(lck2[right])
  sync all
  if (me == 1) then
    call check_i('critical: increments', 0, counter, nimg)
    call check_i('lock: sum', 0, total, nimg * (nimg + 1) / 2)
  end if

  ! --- events: everybody writes its slot on image 1 and posts there; a ring
  fromall = 0
  sync all
  fromall(me)[1] = me * 3
  event post(ev[1])
  if (me == 1) then
    event wait(ev, until_count=nimg)
    call event_query(ev, cnt)
    call check_i('event_query after the wait', 0, cnt, 0)
    do i = 1, nimg
      call check_i('slots written before event post', i, fromall(i), i * 3)
    end do
  end if
  event post(ring[right])
  sync all
  call event_query(ring, cnt)
  call check_i('event_query: posted once', 0, cnt, 1)
  event wait(ring)
  call event_query(ring, cnt)
  call check_i('event_query after the wait', 1, cnt, 0)

  ! --- sync images: a pipeline 1 -> 2 -> ... -> n adding image numbers
  tok = 0
  sync all
  if (me > 1) sync images(me - 1)
  if (me < nimg) then
    tok[me + 1] = tok + me
    sync images(me + 1)
  end if
  call check_i('sync images pipeline', 0, tok, (me - 1) * me / 2)

  ! --- atomics on image 1: atomic_add of every image number; atomic_cas from 0 to the
  ! image number, which exactly one image wins, the others fetching its number.
  ! (OpenCoarrays 2.10.1 leaves OLD of atomic_fetch_add and the other atomic_fetch_*
  ! unset: not used.)
  if (me == 1) then
    call atomic_define(at, 5_atomic_int_kind)
    call atomic_define(acas, 0_atomic_int_kind)
  end if
  sync all
  call atomic_add(at[1], int(me, atomic_int_kind))
  aold = -1
  call atomic_cas(acas[1], aold, 0_atomic_int_kind, int(me, atomic_int_kind))
  sync all
  call atomic_ref(aval, at[1])
  call check_i('atomic_add total', 0, int(aval), 5 + nimg * (nimg + 1) / 2)
  call atomic_ref(aval, acas[1])
  fromall(me)[1] = int(aold)
  sync all
  if (me == 1) then
    j = 0
    do i = 1, nimg
      if (fromall(i) == 0) j = j + 1
    end do
    call check_i('atomic_cas: images that swapped', 0, j, 1)
    do i = 1, nimg
      if (fromall(i) /= 0) call check_i('atomic_cas: old value seen by a loser', i, &
        fromall(i), int(aval))
    end do
    call check_i('atomic_cas: the winner''s value stays', 0, &
      fromall(int(aval)), 0)
  end if
  sync all

  if (nfail /= 0) then
    print '(a,i0,a,i0,a)', 'image ', me, ': ', nfail, ' checks failed'
    error stop 1
  end if
  print '(a,i0,a,i0,a,i0,a)', 'image ', me, ' of ', nimg, ': ', nchecks, ' checks passed'
end program coarrays
