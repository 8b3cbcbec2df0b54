! Derived datatypes through `use mpi`, checked against index lists computed
! here: TYPE_VECTOR over the strided dimension of a matrix (sent around a ring,
! reduced with MPI_SUM), TYPE_CREATE_RESIZED (a transpose), TYPE_CREATE_STRUCT
! from GET_ADDRESS (absolute, with MPI_BOTTOM, and relative with AINT_DIFF), a
! user op on a derived type, the (h)vector/(h)indexed/indexed_block/struct
! constructors in their MPI-2 and MPI-1 forms (checked through PACK/UNPACK),
! subarray, darray, extents (address-kind, _X, MPI-1 INTEGER), envelope and
! contents, names, TYPE_MATCH_SIZE, TYPE_CREATE_F90_*, ADDRESS, AINT_ADD,
! GET_ELEMENTS_X and TYPE_DUP / TYPE_FREE, PACK_EXTERNAL / UNPACK_EXTERNAL /
! PACK_EXTERNAL_SIZE ("external32": big-endian bytes).
module pairop
  implicit none
  integer :: pair_type, op_calls
contains
  ! (a, b) o (c, d) = (a + c, max(b, d)) over pairs of INTEGERs
  subroutine pair_fn(invec, inoutvec, len, dtype)
    integer, intent(in) :: len, dtype
    integer, intent(in) :: invec(2, len)
    integer, intent(inout) :: inoutvec(2, len)
    integer :: i
    op_calls = op_calls + 1
    if (dtype /= pair_type) then
      inoutvec = -999
      return
    end if
    do i = 1, len
      inoutvec(1, i) = invec(1, i) + inoutvec(1, i)
      inoutvec(2, i) = max(invec(2, i), inoutvec(2, i))
    end do
  end subroutine pair_fn
end module pairop

program datatypes
  use mpi
  use pairop
  use iso_c_binding, only: c_int, c_double
  implicit none
  type, bind(c) :: rec
    integer(c_int) :: id
    integer(c_int) :: pad
    real(c_double) :: v(2)
  end type rec
  integer, parameter :: nr = 5, nc = 4
  integer :: rank, np, ierr, nfail, k, i, j, nxt, prv, sz, ni, na, nd, comb, op
  integer :: rowt, rowr, st1, st2, recty, t, t2, hv1, hv2
  integer(kind=1) :: eb(8)
  integer :: ev(2), eback(2)
  integer(kind=MPI_ADDRESS_KIND) :: epos, esize
  integer :: a(nr, nc), b(nr, nc), c(nr, nc), tr(nc, nr)
  integer :: st(MPI_STATUS_SIZE), ints(8), types(4), blens(3), idisp(3), sizes(2), subs(2), starts(2)
  integer(kind=MPI_ADDRESS_KIND) :: lb, ext, tlb, text, addrs(4), adisp(3), a1, a2, a3
  integer(kind=MPI_COUNT_KIND) :: cnt8, lb8, ext8, sz8
  integer :: iv(2), pv(2, 3), pr(2, 3), mlb, mext, mub, i1, i2
  double precision :: dv(3)
  ! reached through MPI_BOTTOM only: the compiler must not keep them in registers
  volatile :: iv, dv
  type(rec) :: rs(4), rr(4)
  character(len=MPI_MAX_OBJECT_NAME) :: name
  integer :: x(64)

  nfail = 0
  op_calls = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  nxt = mod(rank + 1, np)
  prv = mod(rank + np - 1, np)
  do j = 1, nc
    do i = 1, nr
      a(i, j) = rank * 100 + i * 10 + j
    end do
  end do
  x = [(i, i = 1, 64)]

  ! ---- a strided row of a(5,4): vector(4, 1, 5)
  call MPI_TYPE_VECTOR(nc, 1, nr, MPI_INTEGER, rowt, ierr)
  call MPI_TYPE_COMMIT(rowt, ierr)
  call expect(ierr == MPI_SUCCESS, 'type_vector/commit')
  call MPI_TYPE_SIZE(rowt, sz, ierr)
  call MPI_TYPE_GET_EXTENT(rowt, lb, ext, ierr)
  call expect(sz == 16 .and. lb == 0 .and. ext == 4 * ((nc - 1) * nr + 1), 'vector size/extent')
  ! row 2 to the next rank, received into row 4
  b = -1
  call MPI_SENDRECV(a(2, 1), 1, rowt, nxt, 1, b(4, 1), 1, rowt, prv, 1, MPI_COMM_WORLD, st, ierr)
  call expect(all(b(4, :) == [(prv * 100 + 20 + j, j = 1, nc)]), 'vector row sent')
  call expect(count(b == -1) == nr * nc - nc, 'vector recv wrote outside the row')
  call MPI_GET_COUNT(st, rowt, k, ierr)
  call expect(k == 1, 'get_count of the row type')
  ! reduced with MPI_SUM, row 3 into row 1
  c = -1
  call MPI_ALLREDUCE(a(3, 1), c(1, 1), 1, rowt, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS, 'allreduce on a vector type')
  call expect(all(c(1, :) == [(100 * (np * (np - 1) / 2) + np * (30 + j), j = 1, nc)]), &
       'allreduce of a row with MPI_SUM')
  call expect(count(c == -1) == nr * nc - nc, 'allreduce wrote outside the row')
  c = -1
  call MPI_REDUCE(a(5, 1), c(2, 1), 1, rowt, MPI_MAX, np - 1, MPI_COMM_WORLD, ierr)
  if (rank == np - 1) then
    call expect(all(c(2, :) == [((np - 1) * 100 + 50 + j, j = 1, nc)]), 'reduce of a row with MPI_MAX')
  end if

  ! ---- resized to one INTEGER: count nr of it is the transpose
  call MPI_TYPE_CREATE_RESIZED(rowt, 0_MPI_ADDRESS_KIND, 4_MPI_ADDRESS_KIND, rowr, ierr)
  call MPI_TYPE_COMMIT(rowr, ierr)
  call MPI_TYPE_GET_EXTENT(rowr, lb, ext, ierr)
  call MPI_TYPE_GET_TRUE_EXTENT(rowr, tlb, text, ierr)
  call expect(lb == 0 .and. ext == 4 .and. tlb == 0 .and. text == 4 * ((nc - 1) * nr + 1), &
       'resized extent / true extent')
  call MPI_TYPE_GET_EXTENT_X(rowr, lb8, ext8, ierr)
  call MPI_TYPE_GET_TRUE_EXTENT_X(rowr, tlb, text, ierr)
  call MPI_TYPE_SIZE_X(rowr, sz8, ierr)
  call expect(lb8 == 0 .and. ext8 == 4 .and. text == 64 .and. sz8 == 16, 'extent_x / size_x')
  call MPI_SENDRECV(a, nr, rowr, rank, 2, tr, nr * nc, MPI_INTEGER, rank, 2, MPI_COMM_WORLD, st, ierr)
  call expect(all(tr == transpose(a)), 'transpose through a resized vector')
  call MPI_GET_ELEMENTS_X(st, rowr, cnt8, ierr)
  call expect(cnt8 == nr * nc, 'get_elements_x')
  ! 6 INTEGERs received as rows: one and a half rows
  b = -1
  call MPI_SENDRECV(x, 6, MPI_INTEGER, rank, 3, b, 2, rowr, rank, 3, MPI_COMM_WORLD, st, ierr)
  call MPI_GET_ELEMENTS_X(st, rowr, cnt8, ierr)
  call MPI_GET_COUNT(st, rowr, k, ierr)
  call expect(cnt8 == 6 .and. k == MPI_UNDEFINED, 'partial rows: elements / count')
  call expect(all(b(1, :) == [1, 2, 3, 4]) .and. b(2, 1) == 5 .and. b(2, 2) == 6 .and. b(2, 3) == -1, &
       'partial rows: data')

  ! ---- struct with absolute addresses and MPI_BOTTOM
  iv = [rank, -rank]
  dv = [1.5d0, 2.5d0, 3.5d0] * (rank + 1)
  call MPI_GET_ADDRESS(iv, addrs(1), ierr)
  call MPI_GET_ADDRESS(dv, addrs(2), ierr)
  call MPI_TYPE_CREATE_STRUCT(2, [2, 3], addrs, [MPI_INTEGER, MPI_DOUBLE_PRECISION], st1, ierr)
  call MPI_TYPE_COMMIT(st1, ierr)
  call MPI_TYPE_SIZE(st1, sz, ierr)
  call expect(ierr == MPI_SUCCESS .and. sz == 8 + 24, 'struct size')
  call MPI_BCAST(MPI_BOTTOM, 1, st1, np - 1, MPI_COMM_WORLD, ierr)
  call expect(all(iv == [np - 1, 1 - np]) .and. all(dv == [1.5d0, 2.5d0, 3.5d0] * np), &
       'bcast of an absolute struct from MPI_BOTTOM')
  call MPI_GET_ADDRESS(MPI_BOTTOM, a1, ierr)
  call expect(a1 == 0, 'get_address(MPI_BOTTOM) is 0')
  ! relative displacements over an array of records, resized to the record
  call MPI_GET_ADDRESS(rs(1)%id, a1, ierr)
  call MPI_GET_ADDRESS(rs(1)%v, a2, ierr)
  call MPI_GET_ADDRESS(rs(2), a3, ierr)
  adisp(1) = 0
  adisp(2) = MPI_AINT_DIFF(a2, a1)
  call expect(adisp(2) == 8 .and. MPI_AINT_DIFF(a3, a1) == 24, 'aint_diff of record fields')
  call expect(MPI_AINT_ADD(a1, adisp(2)) == a2, 'aint_add')
  call MPI_TYPE_CREATE_STRUCT(2, [1, 2], adisp, [MPI_INTEGER, MPI_DOUBLE_PRECISION], t, ierr)
  call MPI_TYPE_CREATE_RESIZED(t, 0_MPI_ADDRESS_KIND, MPI_AINT_DIFF(a3, a1), recty, ierr)
  call MPI_TYPE_FREE(t, ierr)
  call MPI_TYPE_COMMIT(recty, ierr)
  do i = 1, 4
    rs(i) = rec(rank * 10 + i, -7, [dble(i), dble(rank)])
    rr(i) = rec(-1, -1, [-1d0, -1d0])
  end do
  call MPI_SENDRECV(rs, 4, recty, nxt, 4, rr, 4, recty, prv, 4, MPI_COMM_WORLD, st, ierr)
  do i = 1, 4
    call expect(rr(i)%id == prv * 10 + i .and. rr(i)%pad == -1 .and. &
         rr(i)%v(1) == dble(i) .and. rr(i)%v(2) == dble(prv), 'records through a resized struct')
  end do

  ! ---- a user op on a derived type (pairs of INTEGERs)
  call MPI_TYPE_CONTIGUOUS(2, MPI_INTEGER, pair_type, ierr)
  call MPI_TYPE_COMMIT(pair_type, ierr)
  call MPI_OP_CREATE(pair_fn, .true., op, ierr)
  do i = 1, 3
    pv(:, i) = [rank + i, mod(rank * 7 + i, 5)]
  end do
  pr = 0
  call MPI_ALLREDUCE(pv, pr, 3, pair_type, op, MPI_COMM_WORLD, ierr)
  do i = 1, 3
    k = 0
    do j = 0, np - 1
      k = max(k, mod(j * 7 + i, 5))
    end do
    call expect(pr(1, i) == np * (np - 1) / 2 + np * i .and. pr(2, i) == k, 'user op on pairs')
  end do
  call MPI_OP_FREE(op, ierr)

  ! ---- constructors, checked by packing x(1:64) = 1..64
  call check_pack(rowt, [1, 6, 11, 16], 'vector')
  call MPI_TYPE_CREATE_HVECTOR(2, 2, 12_MPI_ADDRESS_KIND, MPI_INTEGER, t, ierr)
  call check_pack(t, [1, 2, 4, 5], 'create_hvector')
  call MPI_TYPE_FREE(t, ierr)
  call MPI_TYPE_HVECTOR(2, 2, 12, MPI_INTEGER, hv1, ierr)
  call check_pack(hv1, [1, 2, 4, 5], 'hvector (MPI-1)')
  call MPI_TYPE_INDEXED(3, [2, 1, 3], [0, 5, 9], MPI_INTEGER, t, ierr)
  call check_pack(t, [1, 2, 6, 10, 11, 12], 'indexed')
  call MPI_TYPE_FREE(t, ierr)
  adisp = [0_MPI_ADDRESS_KIND, 20_MPI_ADDRESS_KIND, 36_MPI_ADDRESS_KIND]
  call MPI_TYPE_CREATE_HINDEXED(3, [2, 1, 3], adisp, MPI_INTEGER, t, ierr)
  call check_pack(t, [1, 2, 6, 10, 11, 12], 'create_hindexed')
  call MPI_TYPE_FREE(t, ierr)
  idisp = [0, 20, 36]
  call MPI_TYPE_HINDEXED(3, [2, 1, 3], idisp, MPI_INTEGER, t, ierr)
  call check_pack(t, [1, 2, 6, 10, 11, 12], 'hindexed (MPI-1)')
  call MPI_TYPE_FREE(t, ierr)
  call MPI_TYPE_CREATE_INDEXED_BLOCK(3, 2, [7, 0, 3], MPI_INTEGER, t, ierr)
  call check_pack(t, [8, 9, 1, 2, 4, 5], 'create_indexed_block')
  call MPI_TYPE_FREE(t, ierr)
  call MPI_TYPE_CREATE_HINDEXED_BLOCK(2, 3, [40_MPI_ADDRESS_KIND, 8_MPI_ADDRESS_KIND], MPI_INTEGER, t, ierr)
  call check_pack(t, [11, 12, 13, 3, 4, 5], 'create_hindexed_block')
  call MPI_TYPE_FREE(t, ierr)
  blens = [1, 2, 1]
  idisp = [8, 0, 60]
  types(1:3) = [MPI_INTEGER, MPI_INTEGER, hv1]
  call MPI_TYPE_STRUCT(3, blens, idisp, types, t, ierr)
  call check_pack(t, [3, 1, 2, 16, 17, 19, 20], 'struct (MPI-1)')
  call MPI_TYPE_FREE(t, ierr)
  ! MPI-1 extents: INTEGER outputs
  call MPI_TYPE_EXTENT(rowt, mext, ierr)
  call MPI_TYPE_LB(rowt, mlb, ierr)
  call MPI_TYPE_UB(rowt, mub, ierr)
  call expect(ierr == MPI_SUCCESS .and. mext == 64 .and. mlb == 0 .and. mub == 64, 'type_extent/lb/ub')
  call MPI_TYPE_UB(hv1, mub, ierr)
  call expect(mub == 20, 'type_ub of hvector')
  ! subarray: a(2:3, 3:5) of a 6x5 array, Fortran order (0-based starts)
  sizes = [6, 5]
  subs = [2, 3]
  starts = [1, 2]
  call MPI_TYPE_CREATE_SUBARRAY(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_INTEGER, t, ierr)
  call check_pack(t, [((i + (j - 1) * 6, i = 2, 3), j = 3, 5)], 'subarray (Fortran order)')
  call MPI_TYPE_GET_EXTENT(t, lb, ext, ierr)
  call expect(lb == 0 .and. ext == 4 * 30, 'subarray extent')
  call MPI_TYPE_FREE(t, ierr)
  call MPI_TYPE_CREATE_SUBARRAY(2, sizes, subs, starts, MPI_ORDER_C, MPI_INTEGER, t, ierr)
  call check_pack(t, [((j * 5 + i, i = 3, 5), j = 1, 2)], 'subarray (C order)')
  call MPI_TYPE_FREE(t, ierr)
  ! darray: a block distribution of 4 * np INTEGERs over np processes
  call MPI_TYPE_CREATE_DARRAY(np, rank, 1, [4 * np], [MPI_DISTRIBUTE_BLOCK], [MPI_DISTRIBUTE_DFLT_DARG], &
       [np], MPI_ORDER_FORTRAN, MPI_INTEGER, t, ierr)
  call expect(ierr == MPI_SUCCESS, 'create_darray')
  if (4 * np <= 64) call check_pack(t, [(rank * 4 + i, i = 1, 4)], 'darray block')
  call MPI_TYPE_GET_EXTENT(t, lb, ext, ierr)
  call expect(ext == 16 * np, 'darray extent')
  call MPI_TYPE_FREE(t, ierr)

  ! ---- envelope and contents
  call MPI_TYPE_GET_ENVELOPE(rowt, ni, na, nd, comb, ierr)
  call expect(ni == 3 .and. na == 0 .and. nd == 1 .and. comb == MPI_COMBINER_VECTOR, 'envelope of vector')
  call MPI_TYPE_GET_CONTENTS(rowt, 8, 4, 4, ints, addrs, types, ierr)
  call expect(all(ints(1:3) == [nc, 1, nr]) .and. types(1) == MPI_INTEGER, 'contents of vector')
  call MPI_TYPE_CREATE_HVECTOR(3, 1, 40_MPI_ADDRESS_KIND, MPI_INTEGER, hv2, ierr)
  call MPI_TYPE_GET_ENVELOPE(hv2, ni, na, nd, comb, ierr)
  call expect(ni == 2 .and. na == 1 .and. nd == 1 .and. comb == MPI_COMBINER_HVECTOR, 'envelope of hvector')
  call MPI_TYPE_GET_CONTENTS(hv2, 8, 4, 4, ints, addrs, types, ierr)
  call expect(all(ints(1:2) == [3, 1]) .and. addrs(1) == 40 .and. types(1) == MPI_INTEGER, 'contents of hvector')
  call MPI_TYPE_FREE(hv2, ierr)
  call MPI_TYPE_GET_ENVELOPE(MPI_REAL, ni, na, nd, comb, ierr)
  call expect(comb == MPI_COMBINER_NAMED, 'envelope of a named type')

  ! ---- names
  call MPI_TYPE_SET_NAME(rowt, 'matrix row   ', ierr)
  name = 'x'
  call MPI_TYPE_GET_NAME(rowt, name, k, ierr)
  call expect(ierr == MPI_SUCCESS .and. name == 'matrix row' .and. k == 10, 'type set/get name')
  call MPI_TYPE_GET_NAME(MPI_INTEGER, name, k, ierr)
  call expect(name == 'MPI_INTEGER' .and. k == 11, 'name of MPI_INTEGER')

  ! ---- dup, sizes of Fortran kinds
  call MPI_TYPE_DUP(rowt, t2, ierr)
  call MPI_TYPE_SIZE(t2, sz, ierr)
  call MPI_TYPE_GET_ENVELOPE(t2, ni, na, nd, comb, ierr)
  call expect(sz == 16 .and. comb == MPI_COMBINER_DUP, 'type_dup')
  call MPI_TYPE_FREE(t2, ierr)
  call expect(t2 == MPI_DATATYPE_NULL, 'type_free -> MPI_DATATYPE_NULL')
  call MPI_TYPE_MATCH_SIZE(MPI_TYPECLASS_REAL, 8, t, ierr)
  call MPI_TYPE_SIZE(t, sz, ierr)
  call expect(ierr == MPI_SUCCESS .and. sz == 8, 'match_size real 8')
  call MPI_TYPE_MATCH_SIZE(MPI_TYPECLASS_INTEGER, 4, t, ierr)
  call MPI_TYPE_SIZE(t, sz, ierr)
  call expect(sz == 4, 'match_size integer 4')
  call MPI_TYPE_CREATE_F90_REAL(15, MPI_UNDEFINED, t, ierr)
  call MPI_TYPE_SIZE(t, sz, ierr)
  call expect(ierr == MPI_SUCCESS .and. sz == 8, 'f90_real(15)')
  ! (the F90 combiner and the arguments as given; usable at once in a reduction)
  call MPI_TYPE_GET_ENVELOPE(t, ni, na, nd, comb, ierr)
  call expect(comb == MPI_COMBINER_F90_REAL .and. ni == 2 .and. na == 0 .and. nd == 0, &
              'f90_real envelope')
  call MPI_TYPE_GET_CONTENTS(t, 2, 0, 0, ints, addrs, types, ierr)
  call expect(ints(1) == 15 .and. ints(2) == MPI_UNDEFINED, 'f90_real contents')
  dv = (/ 1.5d0, -2.0d0, 0.25d0 /) * (rank + 1)
  call MPI_ALLREDUCE(MPI_IN_PLACE, dv, 3, t, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect(all(dv == (/ 1.5d0, -2.0d0, 0.25d0 /) * (np * (np + 1) / 2)), 'allreduce on f90_real(15)')
  call MPI_TYPE_CREATE_F90_INTEGER(9, t, ierr)
  call MPI_TYPE_SIZE(t, sz, ierr)
  call expect(ierr == MPI_SUCCESS .and. sz == 4, 'f90_integer(9)')
  call MPI_TYPE_CREATE_F90_COMPLEX(6, MPI_UNDEFINED, t, ierr)
  call MPI_TYPE_SIZE(t, sz, ierr)
  call expect(ierr == MPI_SUCCESS .and. sz == 8, 'f90_complex(6)')

  ! ---- MPI_SIZEOF (the mpi module's generic): scalars and arrays of every kind
  call sizeof_checks()

  ! ---- MPI-1 ADDRESS: INTEGER, differences right
  call MPI_ADDRESS(x(1), i1, ierr)
  call MPI_ADDRESS(x(5), i2, ierr)
  call expect(ierr == MPI_SUCCESS .and. i2 - i1 == 16, 'address (MPI-1)')

  call MPI_TYPE_FREE(hv1, ierr)
  call MPI_TYPE_FREE(st1, ierr)
  call MPI_TYPE_FREE(recty, ierr)
  call MPI_TYPE_FREE(pair_type, ierr)
  call MPI_TYPE_FREE(rowr, ierr)
  call MPI_TYPE_FREE(rowt, ierr)
  call expect(ierr == MPI_SUCCESS, 'frees')

  ! ---- external32: two INTEGERs, big-endian
  ev = (/ 1, 258 /)
  call MPI_PACK_EXTERNAL_SIZE('external32', 2, MPI_INTEGER, esize, ierr)
  epos = 0
  eb = -1
  call MPI_PACK_EXTERNAL('external32', ev, 2, MPI_INTEGER, eb, 8_MPI_ADDRESS_KIND, epos, ierr)
  call expect(esize == 8 .and. epos == 8 .and. all(eb == (/ 0_1, 0_1, 0_1, 1_1, 0_1, 0_1, 1_1, 2_1 /)), &
              'pack_external')
  epos = 0
  eback = 0
  call MPI_UNPACK_EXTERNAL('external32', eb, 8_MPI_ADDRESS_KIND, epos, eback, 2, MPI_INTEGER, ierr)
  call expect(ierr == MPI_SUCCESS .and. epos == 8 .and. all(eback == ev), 'unpack_external')

  call MPI_ALLREDUCE(nfail, k, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (k /= 0) call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
  call MPI_FINALIZE(ierr)
  if (rank == 0) print *, 'datatypes: OK on', np, 'ranks'

contains
  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      print *, 'FAIL rank', rank, ': ', what
      nfail = nfail + 1
    end if
  end subroutine expect

  ! Packs one `dt` from x (x(i) = i), unpacks it as INTEGERs and compares with the
  ! expected elements; then unpacks it back through `dt` into zeros.
  subroutine check_pack(dt, want, what)
    integer, intent(in) :: dt
    integer, intent(in) :: want(:)
    character(*), intent(in) :: what
    character :: pbuf(512)
    integer :: got(64), back(64), pos, psz, n, ie, d
    d = dt
    call MPI_TYPE_COMMIT(d, ie)
    n = size(want)
    call MPI_PACK_SIZE(1, d, MPI_COMM_WORLD, psz, ie)
    call expect(ie == MPI_SUCCESS .and. psz >= 4 * n .and. psz <= 512, what // ': pack_size')
    pos = 0
    call MPI_PACK(x, 1, d, pbuf, 512, pos, MPI_COMM_WORLD, ie)
    call expect(ie == MPI_SUCCESS .and. pos == 4 * n, what // ': pack position')
    got = -1
    pos = 0
    call MPI_UNPACK(pbuf, 512, pos, got, n, MPI_INTEGER, MPI_COMM_WORLD, ie)
    call expect(all(got(1:n) == want) .and. got(n + 1) == -1, what // ': packed elements')
    back = 0
    pos = 0
    call MPI_UNPACK(pbuf, 512, pos, back, 1, d, MPI_COMM_WORLD, ie)
    call expect(pos == 4 * n .and. all(back(want) == want) .and. count(back /= 0) == n, &
         what // ': unpacked through the type')
  end subroutine check_pack

  ! MPI_SIZEOF of scalars and of arrays of rank 1 and 2 against MPI_TYPE_SIZE of the
  ! matching named type.
  subroutine sizeof_checks()
    integer(kind=1) :: i1, i1a(3)
    integer(kind=2) :: i2
    integer :: i4, i4a(2, 5), ts, ie
    integer(kind=8) :: i8
    real :: r4a(7)
    double precision :: r8
    real(kind=16) :: r16
    complex :: c8
    complex(kind=8) :: c16a(2, 2)
    logical :: l4
    integer :: got(12), want(12), named(12), k
    call MPI_SIZEOF(i1, got(1), ie)
    call MPI_SIZEOF(i1a, got(2), ie)
    call MPI_SIZEOF(i2, got(3), ie)
    call MPI_SIZEOF(i4, got(4), ie)
    call MPI_SIZEOF(i4a, got(5), ie)
    call MPI_SIZEOF(i8, got(6), ie)
    call MPI_SIZEOF(r4a, got(7), ie)
    call MPI_SIZEOF(r8, got(8), ie)
    call MPI_SIZEOF(r16, got(9), ie)
    call MPI_SIZEOF(c8, got(10), ie)
    call MPI_SIZEOF(c16a, got(11), ie)
    call MPI_SIZEOF(l4, got(12), ie)
    call expect(ie == MPI_SUCCESS, 'mpi_sizeof ierror')
    ! (the named type of each case, in the order of the calls above)
    named = (/ MPI_INTEGER1, MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER, MPI_INTEGER, &
               MPI_INTEGER8, MPI_REAL, MPI_DOUBLE_PRECISION, MPI_REAL16, MPI_COMPLEX, &
               MPI_DOUBLE_COMPLEX, MPI_LOGICAL /)
    k = 0
    do ts = 1, 12
      call MPI_TYPE_SIZE(named(ts), want(ts), ie)
      if (got(ts) /= want(ts)) then
        print *, 'mpi_sizeof case', ts, ':', got(ts), 'want', want(ts)
        k = k + 1
      end if
    end do
    call expect(k == 0, 'mpi_sizeof')
    ! Character (as MPICH has it): one element's length, MPI_CHARACTER's size for len 1.
    block
      character :: ch1, ch1v(6)
      character(len=5) :: ch5v(2, 3)
      integer :: s1, s1v, s5, sch
      call MPI_SIZEOF(ch1, s1, ie)
      call MPI_SIZEOF(ch1v, s1v, ie)
      call MPI_SIZEOF(ch5v, s5, ie)
      call MPI_TYPE_SIZE(MPI_CHARACTER, sch, ie)
      call expect(s1 == sch .and. s1v == sch .and. s5 == 5, 'mpi_sizeof character')
    end block
  end subroutine sizeof_checks
end program datatypes
