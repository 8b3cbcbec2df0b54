! Example 5.21 of MPI-3.1 (PAR_BLAS2): the product of a vector and an array
! distributed across the processes, result at all of them. Made runnable:
! each rank holds m rows of the global (m*np) x n array; the result is
! compared with the product computed sequentially from the whole array.
! The values are small integers, so REAL arithmetic is exact.
program par_blas2_test
  use mpi
  implicit none
  integer, parameter :: m = 3, n = 5
  real :: a(m), b(m, n), c(n), expect(n)
  integer :: rank, np, ierr, i, j, r, gi

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)

  ! global row gi = rank*m + i: a(gi) = gi, b(gi, j) = mod(gi*j, 7) - 3
  do i = 1, m
    gi = rank * m + i
    a(i) = real(gi)
    do j = 1, n
      b(i, j) = real(mod(gi * j, 7) - 3)
    end do
  end do
  c = -99.0

  call PAR_BLAS2(m, n, a, b, c, MPI_COMM_WORLD)

  expect = 0.0
  do r = 0, np - 1
    do i = 1, m
      gi = r * m + i
      do j = 1, n
        expect(j) = expect(j) + real(gi) * real(mod(gi * j, 7) - 3)
      end do
    end do
  end do
  do j = 1, n
    if (c(j) /= expect(j)) then
      print *, 'FAIL par_blas2: rank', rank, 'c(', j, ')=', c(j), 'expected', expect(j)
      call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
    end if
  end do
  call MPI_FINALIZE(ierr)
  if (rank == 0) print *, 'par_blas2: OK on', np, 'ranks'
end program par_blas2_test

! The routine as in the standard (with its IERR checked).
SUBROUTINE PAR_BLAS2(m, n, a, b, c, comm)
  use mpi
  implicit none
  INTEGER m, n
  REAL a(m), b(m,n)    ! local slice of array
  REAL c(n)            ! result
  REAL sum(n)
  INTEGER comm, i, j, ierr

  ! local sum
  DO j= 1, n
    sum(j) = 0.0
    DO i = 1, m
      sum(j) = sum(j) + a(i)*b(i,j)
    END DO
  END DO

  ! global sum
  CALL MPI_ALLREDUCE(sum, c, n, MPI_REAL, MPI_SUM, comm, ierr)
  IF (ierr /= MPI_SUCCESS) THEN
    PRINT *, 'FAIL par_blas2: MPI_ALLREDUCE ierr', ierr
    CALL MPI_ABORT(comm, 1, ierr)
  END IF

  ! return result at all nodes
  RETURN
END SUBROUTINE PAR_BLAS2
