! MPI_ALLOC_MEM / MPI_FREE_MEM from Fortran (`use mpi`): the address comes back in an
! INTEGER(KIND=MPI_ADDRESS_KIND), is turned into an array with C_F_POINTER, and that
! memory is the send buffer of an MPI_ALLREDUCE checked against sums computed here;
! MPI_FREE_MEM takes the array. Under MPI_ERRORS_RETURN a negative size gives
! MPI_ERR_ARG and freeing an array MPI_ALLOC_MEM did not return gives MPI_ERR_BASE.
! Also links MPI_PCONTROL (no IERROR argument).
program alloc_mem_f
  use mpi
  use iso_c_binding
  implicit none
  integer, parameter :: n = 1001
  integer :: ierr, rank, nprocs, i, r, errs, allerrs, cls
  integer(kind=MPI_ADDRESS_KIND) :: sz, baseptr
  type(c_ptr) :: cp
  double precision, pointer :: a(:)
  double precision :: b(n), want, other(4)

  errs = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)

  sz = 8 * n
  call MPI_ALLOC_MEM(sz, MPI_INFO_NULL, baseptr, ierr)
  if (ierr /= MPI_SUCCESS .or. baseptr == 0) then
    errs = errs + 1
    print *, 'rank', rank, ': MPI_ALLOC_MEM ierr', ierr
  end if
  if (mod(baseptr, 64_MPI_ADDRESS_KIND) /= 0) then
    errs = errs + 1
    print *, 'rank', rank, ': MPI_ALLOC_MEM address not 64-byte aligned'
  end if
  cp = transfer(baseptr, cp)
  call c_f_pointer(cp, a, [n])
  do i = 1, n
    a(i) = rank * 0.25d0 + i
  end do
  call MPI_ALLREDUCE(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, n
    want = 0
    do r = 0, nprocs - 1
      want = want + (r * 0.25d0 + i)
    end do
    if (b(i) /= want) then
      errs = errs + 1
      print *, 'rank', rank, ': allreduce', i, b(i), 'want', want
      exit
    end if
  end do
  call MPI_FREE_MEM(a, ierr)
  if (ierr /= MPI_SUCCESS) then
    errs = errs + 1
    print *, 'rank', rank, ': MPI_FREE_MEM ierr', ierr
  end if

  ! MPI_PCONTROL has no IERROR; it returns at once
  call MPI_PCONTROL(1)

  call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  sz = -8
  call MPI_ALLOC_MEM(sz, MPI_INFO_NULL, baseptr, ierr)
  call MPI_ERROR_CLASS(ierr, cls, ierr)
  if (cls /= MPI_ERR_ARG) then
    errs = errs + 1
    print *, 'rank', rank, ': negative size gave class', cls
  end if
  call MPI_FREE_MEM(other, ierr)
  call MPI_ERROR_CLASS(ierr, cls, ierr)
  if (cls /= MPI_ERR_BASE) then
    errs = errs + 1
    print *, 'rank', rank, ': freeing a local array gave class', cls
  end if

  call MPI_ALLREDUCE(errs, allerrs, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (allerrs == 0) then
      print *, 'No Errors'
    else
      print *, 'FAILED'
    end if
  end if
  call MPI_FINALIZE(ierr)
  if (allerrs /= 0) stop 1
end program alloc_mem_f
