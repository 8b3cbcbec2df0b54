! Attributes across the languages (MPI-3.1 17.2.7), with the C functions called from
! Fortran through ISO_C_BINDING:
! - a value set by MPI_COMM_SET_ATTR, MPI_TYPE_SET_ATTR or MPI_ATTR_PUT reads in C as the
!   address of the integer, which holds the value;
! - a value set by C's MPI_Comm_set_attr reads in Fortran as the address-sized integer;
! - MPI_COMM_DUP copies a Fortran value through MPI_COMM_DUP_FN and a C-callable copy
!   callback written in Fortran sees the address form.
module attr_c
  use, intrinsic :: iso_c_binding
  implicit none
  interface
    integer(c_int) function c_comm_get_attr(comm, key, val, flag) bind(C, name='MPI_Comm_get_attr')
      import :: c_int, c_ptr
      integer(c_int), value :: comm, key
      type(c_ptr) :: val
      integer(c_int) :: flag
    end function
    integer(c_int) function c_type_get_attr(dt, key, val, flag) bind(C, name='MPI_Type_get_attr')
      import :: c_int, c_ptr
      integer(c_int), value :: dt, key
      type(c_ptr) :: val
      integer(c_int) :: flag
    end function
    integer(c_int) function c_comm_set_attr(comm, key, val) bind(C, name='MPI_Comm_set_attr')
      import :: c_int, c_ptr
      integer(c_int), value :: comm, key
      type(c_ptr), value :: val
    end function
    integer(c_int) function c_comm_create_keyval(copy, del, key, extra) bind(C, name='MPI_Comm_create_keyval')
      import :: c_int, c_ptr, c_funptr
      type(c_funptr), value :: copy, del
      integer(c_int) :: key
      type(c_ptr), value :: extra
    end function
  end interface
  integer :: c_copies = 0
contains
  ! A copy callback with C's signature: the new value is the address it was given.
  integer(c_int) function c_copy(comm, key, extra, vin, vout, flag) bind(C)
    integer(c_int), value :: comm, key
    type(c_ptr), value :: extra, vin
    type(c_ptr) :: vout
    integer(c_int) :: flag
    integer(c_int64_t), pointer :: p
    c_copies = c_copies + 1
    ! (no extra state was given; the handles are only looked at)
    if (c_associated(extra) .or. comm == key) c_copies = c_copies + 1000
    call c_f_pointer(vin, p)
    if (p /= 31) c_copies = c_copies + 100
    vout = vin
    flag = 1
    c_copy = 0
  end function
end module attr_c

program attr_lang
  use mpi
  use attr_c
  implicit none
  integer :: ierr, key, key2, tkey, dup, dup2, rank, nfail, f
  integer(kind=MPI_ADDRESS_KIND) :: v, extra
  integer(c_int64_t), pointer :: p
  integer(c_int64_t), target :: x
  type(c_ptr) :: cp
  integer(c_int) :: cflag, ckey
  logical :: flag
  nfail = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  extra = 0

  ! Fortran sets, C reads the address of the integer.
  call MPI_COMM_CREATE_KEYVAL(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, key, extra, ierr)
  call MPI_COMM_SET_ATTR(MPI_COMM_WORLD, key, 5555_MPI_ADDRESS_KIND, ierr)
  cflag = 0
  ierr = c_comm_get_attr(MPI_COMM_WORLD, key, cp, cflag)
  call c_f_pointer(cp, p)
  call check(ierr == 0 .and. cflag /= 0 .and. p == 5555, 'C reads MPI_COMM_SET_ATTR as a pointer')
  call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, key, v, flag, ierr)
  call check(flag .and. v == 5555, 'Fortran reads its own value')

  ! MPI_COMM_DUP_FN copies the Fortran value: both forms on the duplicate.
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  call MPI_COMM_GET_ATTR(dup, key, v, flag, ierr)
  call check(flag .and. v == 5555, 'MPI_COMM_DUP_FN copy read from Fortran')
  ierr = c_comm_get_attr(dup, key, cp, cflag)
  call c_f_pointer(cp, p)
  call check(cflag /= 0 .and. p == 5555, 'MPI_COMM_DUP_FN copy read from C')

  ! C sets an address, Fortran reads it as an address-sized integer.
  x = 77
  ierr = c_comm_set_attr(MPI_COMM_WORLD, key, c_loc(x))
  call MPI_COMM_GET_ATTR(MPI_COMM_WORLD, key, v, flag, ierr)
  call check(flag .and. v == transfer(c_loc(x), v), 'Fortran reads a C value as the address')

  ! A C-convention copy callback gets the address of a Fortran-set integer.
  ierr = c_comm_create_keyval(c_funloc(c_copy), c_null_funptr, ckey, c_null_ptr)
  key2 = ckey
  call MPI_COMM_SET_ATTR(dup, key2, 31_MPI_ADDRESS_KIND, ierr)
  call MPI_COMM_DUP(dup, dup2, ierr)
  call check(c_copies == 1, 'C copy callback saw the address of the Fortran integer')
  ierr = c_comm_get_attr(dup2, key2, cp, cflag)
  call c_f_pointer(cp, p)
  call check(cflag /= 0 .and. p == 31, 'C copy made by the callback')

  ! MPI_TYPE_SET_ATTR and MPI-1 MPI_ATTR_PUT: the same address form in C.
  call MPI_TYPE_CREATE_KEYVAL(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, tkey, extra, ierr)
  call MPI_TYPE_SET_ATTR(MPI_INTEGER, tkey, 7777_MPI_ADDRESS_KIND, ierr)
  ierr = c_type_get_attr(MPI_INTEGER, tkey, cp, cflag)
  call c_f_pointer(cp, p)
  call check(cflag /= 0 .and. p == 7777, 'C reads MPI_TYPE_SET_ATTR as a pointer')
  call MPI_TYPE_DELETE_ATTR(MPI_INTEGER, tkey, ierr)
  call MPI_ATTR_PUT(dup, key, -4444, ierr)
  ierr = c_comm_get_attr(dup, key, cp, cflag)
  call c_f_pointer(cp, p)
  call check(cflag /= 0 .and. p == -4444, 'C reads MPI_ATTR_PUT as a pointer')
  call MPI_ATTR_GET(dup, key, f, flag, ierr)
  call check(flag .and. f == -4444, 'MPI_ATTR_GET reads its own value')

  call MPI_COMM_FREE(dup2, ierr)
  call MPI_COMM_FREE(dup, ierr)
  call MPI_COMM_DELETE_ATTR(MPI_COMM_WORLD, key, ierr)
  call MPI_COMM_FREE_KEYVAL(key, ierr)
  call MPI_COMM_FREE_KEYVAL(key2, ierr)
  call MPI_TYPE_FREE_KEYVAL(tkey, ierr)
  if (nfail == 0) print *, 'attr_lang: OK on rank', rank
  call MPI_FINALIZE(ierr)
  if (nfail /= 0) stop 1
contains
  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      print *, 'FAIL rank', rank, ': ', what
      nfail = nfail + 1
    end if
  end subroutine check
end program attr_lang
