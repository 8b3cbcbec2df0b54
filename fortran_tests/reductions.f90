! Every reduction of the Fortran binding (`use mpi`), checked against a
! sequential oracle: REDUCE, ALLREDUCE, REDUCE_LOCAL, REDUCE_SCATTER_BLOCK,
! REDUCE_SCATTER, SCAN, EXSCAN, each also with MPI_IN_PLACE; the Fortran types
! INTEGER, REAL, DOUBLE PRECISION, COMPLEX, DOUBLE COMPLEX, LOGICAL (LAND, LOR,
! LXOR), INTEGER*8 (MPI_INTEGER8); MINLOC/MAXLOC on MPI_2INTEGER, MPI_2REAL and
! MPI_2DOUBLE_PRECISION; Fortran user ops (commutative and not) and
! OP_COMMUTATIVE.

! Commutative user op: elementwise sum of absolute values (INTEGER).
subroutine abs_sum(invec, inoutvec, len, dtype)
  implicit none
  integer :: len, dtype, i
  integer :: invec(len), inoutvec(len)
  do i = 1, len
    inoutvec(i) = abs(invec(i)) + abs(inoutvec(i))
  end do
end subroutine abs_sum

! Non-commutative user op on MPI_2INTEGER: (s, t) is the map x -> s*x + t
! with s = +-1; a o b applies a first, then b (composition is associative).
subroutine compose(invec, inoutvec, len, dtype)
  implicit none
  integer :: len, dtype, i, s, t
  integer :: invec(2, len), inoutvec(2, len)
  do i = 1, len
    s = invec(1, i) * inoutvec(1, i)
    t = inoutvec(1, i) * invec(2, i) + inoutvec(2, i)
    inoutvec(1, i) = s
    inoutvec(2, i) = t
  end do
end subroutine compose

program reductions
  use mpi
  implicit none
  integer, parameter :: n = 6
  external :: abs_sum, compose
  integer :: rank, np, ierr, i, r, k, root
  integer :: iv(n), ir(n), iexp(n), big(4 * n), bigr(4 * n)
  real :: rv(n), rr(n)
  double precision :: dv(n), dr(n), dexp(n)
  complex :: cv(2), cr(2), cexp(2)
  double complex :: zv(2), zr(2)
  logical :: lv(3), lr(3), land_e(3), lor_e(3), lxor_e(3)
  integer(kind=8) :: i8v(2), i8r(2)
  integer :: p2(2, 2), p2r(2, 2)
  real :: r2(2, 1), r2r(2, 1)
  double precision :: d2(2, 1), d2r(2, 1)
  integer :: counts(64), opsum, opcomp
  logical :: commute
  integer :: nfail
  integer :: aff(2, 3), affr(2, 3), affe(2, 3), s, t

  nfail = 0
  call MPI_INIT(ierr)
  call checkerr(ierr, 'init')
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  root = np / 2

  ! ---------------- INTEGER SUM/MAX/MIN/PROD with REDUCE and ALLREDUCE
  do i = 1, n
    iv(i) = x(rank, i)
    iexp(i) = 0
    do r = 0, np - 1
      iexp(i) = iexp(i) + x(r, i)
    end do
  end do
  ir = -777
  call MPI_REDUCE(iv, ir, n, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'reduce int')
  if (rank == root) call check(all(ir == iexp), 'reduce int sum')
  ir = iv
  if (rank == root) then
    call MPI_REDUCE(MPI_IN_PLACE, ir, n, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
    call check(all(ir == iexp), 'reduce int sum in place')
  else
    call MPI_REDUCE(ir, MPI_BOTTOM, n, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
  end if
  call checkerr(ierr, 'reduce in place')
  call MPI_ALLREDUCE(iv, ir, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'allreduce max')
  do i = 1, n
    call check(ir(i) == maxval([(x(r, i), r = 0, np - 1)]), 'allreduce int max')
  end do
  ir = iv
  call MPI_ALLREDUCE(MPI_IN_PLACE, ir, n, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'allreduce min in place')
  do i = 1, n
    call check(ir(i) == minval([(x(r, i), r = 0, np - 1)]), 'allreduce int min in place')
  end do
  call MPI_ALLREDUCE(iv, ir, n, MPI_INTEGER, MPI_PROD, MPI_COMM_WORLD, ierr)
  do i = 1, n
    call check(ir(i) == product([(x(r, i), r = 0, np - 1)]), 'allreduce int prod')
  end do
  call MPI_ALLREDUCE(iv, ir, n, MPI_INTEGER, MPI_BXOR, MPI_COMM_WORLD, ierr)
  do i = 1, n
    k = 0
    do r = 0, np - 1
      k = ieor(k, x(r, i))
    end do
    call check(ir(i) == k, 'allreduce int bxor')
  end do

  ! ---------------- REAL and DOUBLE PRECISION (exact small integers)
  rv = real(iv)
  call MPI_ALLREDUCE(rv, rr, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'allreduce real')
  call check(all(rr == real(iexp)), 'allreduce real sum')
  dv = dble(iv) * 0.5d0
  dexp = dble(iexp) * 0.5d0
  call MPI_ALLREDUCE(dv, dr, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(dr == dexp), 'allreduce double sum')
  dr = dv
  call MPI_ALLREDUCE(MPI_IN_PLACE, dr, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  do i = 1, n
    call check(dr(i) == 0.5d0 * maxval([(x(r, i), r = 0, np - 1)]), 'allreduce double max in place')
  end do

  ! ---------------- COMPLEX and DOUBLE COMPLEX
  cv(1) = cmplx(real(rank + 1), 1.0)
  cv(2) = cmplx(1.0, real(rank))
  call MPI_ALLREDUCE(cv, cr, 2, MPI_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'allreduce complex')
  cexp(1) = cmplx(real(np * (np + 1) / 2), real(np))
  cexp(2) = cmplx(real(np), real(np * (np - 1) / 2))
  call check(all(cr == cexp), 'allreduce complex sum')
  call MPI_ALLREDUCE(cv, cr, 2, MPI_COMPLEX, MPI_PROD, MPI_COMM_WORLD, ierr)
  cexp = (1.0, 0.0)
  do r = 0, np - 1
    cexp(1) = cexp(1) * cmplx(real(r + 1), 1.0)
    cexp(2) = cexp(2) * cmplx(1.0, real(r))
  end do
  call check(all(cr == cexp), 'allreduce complex prod')
  zv = dcmplx(dble(rank), -1.0d0)
  call MPI_REDUCE(zv, zr, 2, MPI_DOUBLE_COMPLEX, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'reduce double complex')
  if (rank == 0) call check(all(zr == dcmplx(dble(np * (np - 1) / 2), -dble(np))), &
       'reduce double complex sum')

  ! ---------------- LOGICAL
  lv(1) = .true.
  lv(2) = rank == 0
  lv(3) = mod(rank, 2) == 1
  land_e = [.true., np == 1, .false.]
  lor_e = [.true., .true., np > 1]
  lxor_e(1) = mod(np, 2) == 1
  lxor_e(2) = .true.
  lxor_e(3) = mod(np / 2, 2) == 1
  call MPI_ALLREDUCE(lv, lr, 3, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'allreduce logical')
  call check(all(lr .eqv. land_e), 'allreduce logical land')
  call MPI_ALLREDUCE(lv, lr, 3, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  call check(all(lr .eqv. lor_e), 'allreduce logical lor')
  lr = lv
  call MPI_ALLREDUCE(MPI_IN_PLACE, lr, 3, MPI_LOGICAL, MPI_LXOR, MPI_COMM_WORLD, ierr)
  call check(all(lr .eqv. lxor_e), 'allreduce logical lxor in place')

  ! ---------------- INTEGER*8
  i8v(1) = 3000000000_8 + rank
  i8v(2) = -int(rank, 8) * 5000000000_8
  call MPI_ALLREDUCE(i8v, i8r, 2, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'allreduce integer8')
  call check(i8r(1) == 3000000000_8 * np + np * (np - 1) / 2, 'allreduce integer8 sum (1)')
  call check(i8r(2) == -5000000000_8 * (np * (np - 1) / 2), 'allreduce integer8 sum (2)')
  call MPI_ALLREDUCE(i8v, i8r, 2, MPI_INTEGER8, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check(i8r(1) == 3000000000_8 + np - 1 .and. i8r(2) == 0, 'allreduce integer8 max')

  ! ---------------- MINLOC / MAXLOC on pairs (value, index)
  ! element 1: value mod(rank,2) (ties -> smallest index); element 2: value -rank
  p2(1, 1) = mod(rank, 2)
  p2(2, 1) = rank
  p2(1, 2) = -rank
  p2(2, 2) = rank
  call MPI_ALLREDUCE(p2, p2r, 2, MPI_2INTEGER, MPI_MINLOC, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'allreduce 2integer')
  call check(p2r(1, 1) == 0 .and. p2r(2, 1) == 0, '2integer minloc tie')
  call check(p2r(1, 2) == -(np - 1) .and. p2r(2, 2) == np - 1, '2integer minloc')
  call MPI_ALLREDUCE(p2, p2r, 2, MPI_2INTEGER, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
  call check(p2r(1, 1) == min(1, np - 1) .and. p2r(2, 1) == min(1, np - 1), '2integer maxloc tie')
  call check(p2r(1, 2) == 0 .and. p2r(2, 2) == 0, '2integer maxloc')
  r2(1, 1) = real(mod(rank + 1, np))
  r2(2, 1) = real(rank)
  call MPI_REDUCE(r2, r2r, 1, MPI_2REAL, MPI_MAXLOC, 0, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'reduce 2real')
  if (rank == 0) call check(r2r(1, 1) == real(np - 1) .and. r2r(2, 1) == real(np - 2 + merge(1, 0, np == 1)), &
       '2real maxloc')
  d2(1, 1) = dble(mod(rank + 1, np))
  d2(2, 1) = dble(rank)
  d2r = d2
  call MPI_ALLREDUCE(MPI_IN_PLACE, d2r, 1, MPI_2DOUBLE_PRECISION, MPI_MINLOC, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'allreduce 2double')
  call check(d2r(1, 1) == 0d0 .and. d2r(2, 1) == dble(np - 1), '2double_precision minloc in place')

  ! ---------------- REDUCE_LOCAL
  ir = [(i, i = 1, n)]
  call MPI_REDUCE_LOCAL(iv, ir, n, MPI_INTEGER, MPI_SUM, ierr)
  call checkerr(ierr, 'reduce_local')
  call check(all(ir == iv + [(i, i = 1, n)]), 'reduce_local sum')

  ! ---------------- REDUCE_SCATTER_BLOCK (2 per rank) and REDUCE_SCATTER
  do i = 1, 2 * np
    big(i) = x(rank, i)
  end do
  bigr = -1
  call MPI_REDUCE_SCATTER_BLOCK(big, bigr, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'reduce_scatter_block')
  do k = 1, 2
    i = 2 * rank + k
    call check(bigr(k) == sum([(x(r, i), r = 0, np - 1)]), 'reduce_scatter_block')
  end do
  bigr(1:2 * np) = big(1:2 * np)
  call MPI_REDUCE_SCATTER_BLOCK(MPI_IN_PLACE, bigr, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'reduce_scatter_block in place')
  do k = 1, 2
    i = 2 * rank + k
    call check(bigr(k) == sum([(x(r, i), r = 0, np - 1)]), 'reduce_scatter_block in place')
  end do
  ! rank r receives r+1 elements
  do r = 0, np - 1
    counts(r + 1) = r + 1
  end do
  k = np * (np + 1) / 2
  do i = 1, k
    big(i) = x(rank, i)
  end do
  bigr = -1
  call MPI_REDUCE_SCATTER(big, bigr, counts, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'reduce_scatter')
  do k = 1, rank + 1
    i = rank * (rank + 1) / 2 + k
    call check(bigr(k) == sum([(x(r, i), r = 0, np - 1)]), 'reduce_scatter')
  end do
  bigr(1:np * (np + 1) / 2) = big(1:np * (np + 1) / 2)
  call MPI_REDUCE_SCATTER(MPI_IN_PLACE, bigr, counts, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'reduce_scatter in place')
  do k = 1, rank + 1
    i = rank * (rank + 1) / 2 + k
    call check(bigr(k) == maxval([(x(r, i), r = 0, np - 1)]), 'reduce_scatter in place')
  end do

  ! ---------------- SCAN and EXSCAN
  call MPI_SCAN(iv, ir, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'scan')
  do i = 1, n
    call check(ir(i) == sum([(x(r, i), r = 0, rank)]), 'scan sum')
  end do
  dr = dble(iv)
  call MPI_SCAN(MPI_IN_PLACE, dr, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'scan in place')
  do i = 1, n
    call check(dr(i) == dble(maxval([(x(r, i), r = 0, rank)])), 'scan max in place')
  end do
  ir = -999
  call MPI_EXSCAN(iv, ir, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'exscan')
  if (rank > 0) then
    do i = 1, n
      call check(ir(i) == sum([(x(r, i), r = 0, rank - 1)]), 'exscan sum')
    end do
  end if
  ir = iv
  call MPI_EXSCAN(MPI_IN_PLACE, ir, n, MPI_INTEGER, MPI_PROD, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'exscan in place')
  if (rank > 0) then
    do i = 1, n
      call check(ir(i) == product([(x(r, i), r = 0, rank - 1)]), 'exscan prod in place')
    end do
  end if

  ! ---------------- user ops
  call MPI_OP_CREATE(abs_sum, .true., opsum, ierr)
  call checkerr(ierr, 'op_create commutative')
  call MPI_OP_COMMUTATIVE(opsum, commute, ierr)
  call checkerr(ierr, 'op_commutative')
  call check(commute, 'op_commutative of a commutative op')
  call MPI_OP_CREATE(compose, .false., opcomp, ierr)
  call checkerr(ierr, 'op_create non-commutative')
  call MPI_OP_COMMUTATIVE(opcomp, commute, ierr)
  call check(.not. commute, 'op_commutative of a non-commutative op')
  call MPI_OP_COMMUTATIVE(MPI_SUM, commute, ierr)
  call check(commute, 'op_commutative(MPI_SUM)')

  call MPI_ALLREDUCE(iv, ir, n, MPI_INTEGER, opsum, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'allreduce user op')
  if (np > 1) then
    ! with np > 1 every element is a sum of absolute values (combining order aside)
    do i = 1, n
      call check(ir(i) == sum([(abs(x(r, i)), r = 0, np - 1)]), 'allreduce commutative user op')
    end do
  else
    call check(all(ir == iv), 'allreduce user op on one rank')
  end if

  do k = 1, 3
    aff(1, k) = merge(1, -1, mod(rank + k, 3) /= 0)
    aff(2, k) = rank * k + 1
  end do
  ! oracle: fold rank 0, 1, ..., np-1 in order
  affe(1, :) = 1
  affe(2, :) = 0
  do r = 0, np - 1
    do k = 1, 3
      s = merge(1, -1, mod(r + k, 3) /= 0)
      t = r * k + 1
      affe(2, k) = s * affe(2, k) + t
      affe(1, k) = affe(1, k) * s
    end do
  end do
  affr = 0
  call MPI_REDUCE(aff, affr, 3, MPI_2INTEGER, opcomp, root, MPI_COMM_WORLD, ierr)
  call checkerr(ierr, 'reduce non-commutative user op')
  if (rank == root) call check(all(affr == affe), 'reduce non-commutative user op')
  call MPI_ALLREDUCE(aff, affr, 3, MPI_2INTEGER, opcomp, MPI_COMM_WORLD, ierr)
  call check(all(affr == affe), 'allreduce non-commutative user op')
  ! scan with the non-commutative op: prefix of ranks 0..rank
  call MPI_SCAN(aff, affr, 3, MPI_2INTEGER, opcomp, MPI_COMM_WORLD, ierr)
  affe(1, :) = 1
  affe(2, :) = 0
  do r = 0, rank
    do k = 1, 3
      s = merge(1, -1, mod(r + k, 3) /= 0)
      affe(2, k) = s * affe(2, k) + (r * k + 1)
      affe(1, k) = affe(1, k) * s
    end do
  end do
  call check(all(affr == affe), 'scan non-commutative user op')

  call MPI_OP_FREE(opsum, ierr)
  call checkerr(ierr, 'op_free')
  call check(opsum == MPI_OP_NULL, 'op_free sets MPI_OP_NULL')
  call MPI_OP_FREE(opcomp, ierr)

  call MPI_ALLREDUCE(nfail, k, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (k /= 0) then
    if (nfail > 0) print *, 'reductions: rank', rank, nfail, 'failures'
    call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
  end if
  call MPI_FINALIZE(ierr)
  if (rank == 0) print *, 'reductions: OK on', np, 'ranks'

contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      print *, 'FAIL: ', what
      nfail = nfail + 1
    end if
  end subroutine check
  subroutine checkerr(ierr, what)
    integer, intent(in) :: ierr
    character(*), intent(in) :: what
    call check(ierr == 0, what // ': IERROR /= MPI_SUCCESS')
  end subroutine checkerr
  ! Rank r's contribution to element i.
  integer function x(r, i)
    integer, intent(in) :: r, i
    x = mod(r * 7 + i * 3, 11) - 5
  end function x
end program reductions
