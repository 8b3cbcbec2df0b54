! Hostile input from Fortran (`use mpi`) under MPI_ERRORS_RETURN: each call below has
! one bad argument (bad on every rank) and must return the standard error class in
! IERROR; an ALLREDUCE after each error must still give the right answer.
program hostile
  use mpi
  implicit none
  integer :: rank, np, ierr, nbad, ncases, total, dup, freed, commute
  integer :: rcounts(64)
  double precision :: a(4), b(4)

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  nbad = 0
  ncases = 0
  a = 1.0d0
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  freed = dup
  call MPI_COMM_FREE(dup, ierr)

  call MPI_ALLREDUCE(a, b, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_NULL, ierr)
  call check(ierr, MPI_ERR_COMM, 'ALLREDUCE comm=MPI_COMM_NULL')
  call MPI_ALLREDUCE(a, b, 1, MPI_DOUBLE_PRECISION, MPI_SUM, freed, ierr)
  call check(ierr, MPI_ERR_COMM, 'ALLREDUCE freed comm')
  call MPI_ALLREDUCE(a, b, -1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(ierr, MPI_ERR_COUNT, 'ALLREDUCE count=-1')
  call MPI_ALLREDUCE(a, b, 1, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(ierr, MPI_ERR_TYPE, 'ALLREDUCE datatype=MPI_DATATYPE_NULL')
  call MPI_ALLREDUCE(a, b, 1, MPI_DOUBLE_PRECISION, MPI_OP_NULL, MPI_COMM_WORLD, ierr)
  call check(ierr, MPI_ERR_OP, 'ALLREDUCE op=MPI_OP_NULL')
  call MPI_ALLREDUCE(a, b, 1, MPI_DOUBLE_PRECISION, MPI_BAND, MPI_COMM_WORLD, ierr)
  call check(ierr, MPI_ERR_OP, 'ALLREDUCE BAND on DOUBLE PRECISION')
  call MPI_ALLREDUCE(a, b, 1, MPI_DOUBLE_PRECISION, MPI_LAND, MPI_COMM_WORLD, ierr)
  call check(ierr, MPI_ERR_OP, 'ALLREDUCE LAND on DOUBLE PRECISION')
  call MPI_ALLREDUCE(a, b, 1, MPI_REAL, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
  call check(ierr, MPI_ERR_OP, 'ALLREDUCE MAXLOC on REAL')
  call MPI_REDUCE(a, b, 1, MPI_DOUBLE_PRECISION, MPI_SUM, np, MPI_COMM_WORLD, ierr)
  call check(ierr, MPI_ERR_ROOT, 'REDUCE root=size')
  call MPI_REDUCE(a, b, 1, MPI_DOUBLE_PRECISION, MPI_SUM, -5, MPI_COMM_WORLD, ierr)
  call check(ierr, MPI_ERR_ROOT, 'REDUCE root=-5')
  call MPI_REDUCE_LOCAL(MPI_IN_PLACE, b, 1, MPI_DOUBLE_PRECISION, MPI_SUM, ierr)
  call check(ierr, MPI_ERR_BUFFER, 'REDUCE_LOCAL inbuf=MPI_IN_PLACE')
  call MPI_REDUCE_LOCAL(a, b, 1, MPI_DOUBLE_PRECISION, MPI_BOR, ierr)
  call check(ierr, MPI_ERR_OP, 'REDUCE_LOCAL BOR on DOUBLE PRECISION')
  call MPI_OP_COMMUTATIVE(MPI_OP_NULL, commute, ierr)
  call check(ierr, MPI_ERR_OP, 'OP_COMMUTATIVE op=MPI_OP_NULL')
  rcounts = 1
  rcounts(np) = -1
  call MPI_REDUCE_SCATTER(a, b, rcounts, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(ierr, MPI_ERR_COUNT, 'REDUCE_SCATTER recvcounts(size)=-1')
  call MPI_REDUCE_SCATTER_BLOCK(a, b, -3, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(ierr, MPI_ERR_COUNT, 'REDUCE_SCATTER_BLOCK recvcount=-3')
  call MPI_SCAN(a, b, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_NULL, ierr)
  call check(ierr, MPI_ERR_COMM, 'SCAN comm=MPI_COMM_NULL')
  call MPI_EXSCAN(a, b, 1, MPI_LOGICAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(ierr, MPI_ERR_OP, 'EXSCAN SUM on LOGICAL')

  call MPI_ALLREDUCE(nbad, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a,i0,a,i0)', 'hostile.f90: np ', np, ': ', ncases, &
       ' bad calls per rank, wrong answers: ', total
  call MPI_FINALIZE(ierr)
  if (total /= 0) stop 1

contains

  subroutine check(rc, want, what)
    integer, intent(in) :: rc, want
    character(len=*), intent(in) :: what
    integer :: c, e, one, s
    ncases = ncases + 1
    c = MPI_SUCCESS
    if (rc /= MPI_SUCCESS) call MPI_ERROR_CLASS(rc, c, e)
    if (c /= want) then
      print '(a,i0,a,a,a,i0,a,i0)', 'hostile.f90: rank ', rank, ': ', what, &
           ': class ', c, ', want ', want
      nbad = nbad + 1
    end if
    one = 1
    s = -1
    call MPI_ALLREDUCE(one, s, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, e)
    if (e /= MPI_SUCCESS .or. s /= np) then
      print '(a,i0,a,a)', 'hostile.f90: rank ', rank, ': ALLREDUCE failed after ', what
      nbad = nbad + 1
    end if
  end subroutine check
end program hostile
