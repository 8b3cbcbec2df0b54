! The data-movement collectives through `use mpi`, with a sequential
! oracle: BARRIER, BCAST, GATHER(V), SCATTER(V), ALLGATHER(V), ALLTOALL(V,W),
! including MPI_IN_PLACE at the root (GATHER, SCATTER) and in ALLGATHER(V).
program collectives
  use mpi
  implicit none
  integer, parameter :: mx = 64
  integer :: rank, np, ierr, root, i, r, k, nfail, off
  integer :: sbuf(mx), rbuf(mx * 8), counts(8), displs(8), rcounts(8), rdispls(8)
  integer :: types(8), rtypes(8), bdispls(8), brdispls(8)
  double precision :: d(4)

  nfail = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  root = np - 1

  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS, 'barrier')

  ! BCAST
  d = 0d0
  if (rank == root) d = [1.5d0, -2d0, 3d0, 4.25d0]
  call MPI_BCAST(d, 4, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. all(d == [1.5d0, -2d0, 3d0, 4.25d0]), 'bcast')

  ! GATHER: 3 per rank
  sbuf(1:3) = [(rank * 10 + k, k = 1, 3)]
  rbuf = -1
  call MPI_GATHER(sbuf, 3, MPI_INTEGER, rbuf, 3, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS, 'gather')
  if (rank == root) then
    do r = 0, np - 1
      call expect(all(rbuf(3 * r + 1:3 * r + 3) == [(r * 10 + k, k = 1, 3)]), 'gather data')
    end do
  end if
  ! GATHER in place at the root
  if (rank == root) then
    rbuf = -1
    rbuf(3 * root + 1:3 * root + 3) = sbuf(1:3)
    call MPI_GATHER(MPI_IN_PLACE, 3, MPI_INTEGER, rbuf, 3, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    do r = 0, np - 1
      call expect(all(rbuf(3 * r + 1:3 * r + 3) == [(r * 10 + k, k = 1, 3)]), 'gather in place')
    end do
  else
    call MPI_GATHER(sbuf, 3, MPI_INTEGER, MPI_BOTTOM, 0, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  end if
  call expect(ierr == MPI_SUCCESS, 'gather in place ierr')

  ! GATHERV: rank r sends r+1 elements, placed in reverse rank order
  call layout(np, counts, displs)
  sbuf(1:rank + 1) = [(rank * 100 + k, k = 1, rank + 1)]
  rbuf = -1
  call MPI_GATHERV(sbuf, rank + 1, MPI_INTEGER, rbuf, counts, displs, MPI_INTEGER, &
       0, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS, 'gatherv')
  if (rank == 0) then
    do r = 0, np - 1
      call expect(all(rbuf(displs(r + 1) + 1:displs(r + 1) + r + 1) == [(r * 100 + k, k = 1, r + 1)]), &
           'gatherv data')
    end do
  end if

  ! SCATTER and SCATTER in place
  if (rank == root) sbuf(1:2 * np) = [(k * 7, k = 1, 2 * np)]
  rbuf = -1
  call MPI_SCATTER(sbuf, 2, MPI_INTEGER, rbuf, 2, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. rbuf(1) == (2 * rank + 1) * 7 .and. &
       rbuf(2) == (2 * rank + 2) * 7 .and. rbuf(3) == -1, 'scatter')
  if (rank == root) then
    call MPI_SCATTER(sbuf, 2, MPI_INTEGER, MPI_IN_PLACE, 2, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    call expect(sbuf(2 * root + 1) == (2 * root + 1) * 7, 'scatter in place keeps root data')
  else
    call MPI_SCATTER(MPI_BOTTOM, 0, MPI_INTEGER, rbuf, 2, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    call expect(rbuf(1) == (2 * rank + 1) * 7, 'scatter (root in place)')
  end if

  ! SCATTERV: rank r receives r+1 elements
  if (rank == 0) then
    do r = 0, np - 1
      sbuf(displs(r + 1) + 1:displs(r + 1) + r + 1) = [(r * 1000 + k, k = 1, r + 1)]
    end do
  end if
  rbuf = -1
  call MPI_SCATTERV(sbuf, counts, displs, MPI_INTEGER, rbuf, rank + 1, MPI_INTEGER, 0, &
       MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. all(rbuf(1:rank + 1) == [(rank * 1000 + k, k = 1, rank + 1)]) &
       .and. rbuf(rank + 2) == -1, 'scatterv')

  ! ALLGATHER, also in place
  sbuf(1) = rank * rank
  rbuf = -1
  call MPI_ALLGATHER(sbuf, 1, MPI_INTEGER, rbuf, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. all(rbuf(1:np) == [(r * r, r = 0, np - 1)]), 'allgather')
  rbuf = -1
  rbuf(rank + 1) = rank + 5
  call MPI_ALLGATHER(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. all(rbuf(1:np) == [(r + 5, r = 0, np - 1)]), 'allgather in place')

  ! ALLGATHERV, also in place
  sbuf(1:rank + 1) = [(rank * 100 + k, k = 1, rank + 1)]
  rbuf = -1
  call MPI_ALLGATHERV(sbuf, rank + 1, MPI_INTEGER, rbuf, counts, displs, MPI_INTEGER, &
       MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS, 'allgatherv')
  do r = 0, np - 1
    call expect(all(rbuf(displs(r + 1) + 1:displs(r + 1) + r + 1) == [(r * 100 + k, k = 1, r + 1)]), &
         'allgatherv data')
  end do
  rbuf = -1
  rbuf(displs(rank + 1) + 1:displs(rank + 1) + rank + 1) = [(rank * 3 + k, k = 1, rank + 1)]
  call MPI_ALLGATHERV(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, counts, displs, MPI_INTEGER, &
       MPI_COMM_WORLD, ierr)
  do r = 0, np - 1
    call expect(all(rbuf(displs(r + 1) + 1:displs(r + 1) + r + 1) == [(r * 3 + k, k = 1, r + 1)]), &
         'allgatherv in place')
  end do

  ! ALLTOALL: element for rank r is rank*100 + r
  sbuf(1:np) = [(rank * 100 + r, r = 0, np - 1)]
  rbuf = -1
  call MPI_ALLTOALL(sbuf, 1, MPI_INTEGER, rbuf, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS .and. all(rbuf(1:np) == [(r * 100 + rank, r = 0, np - 1)]), 'alltoall')

  ! ALLTOALLV: rank sends r+1 elements to rank r; receives rank+1 from each
  off = 0
  do r = 0, np - 1
    counts(r + 1) = r + 1
    displs(r + 1) = off
    sbuf(off + 1:off + r + 1) = [(rank * 1000 + r * 10 + k, k = 1, r + 1)]
    off = off + r + 1
    rcounts(r + 1) = rank + 1
    rdispls(r + 1) = r * (rank + 1)
  end do
  rbuf = -1
  call MPI_ALLTOALLV(sbuf, counts, displs, MPI_INTEGER, rbuf, rcounts, rdispls, MPI_INTEGER, &
       MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS, 'alltoallv')
  do r = 0, np - 1
    call expect(all(rbuf(rdispls(r + 1) + 1:rdispls(r + 1) + rank + 1) == &
         [(r * 1000 + rank * 10 + k, k = 1, rank + 1)]), 'alltoallv data')
  end do

  ! ALLTOALLW: same exchange, byte displacements and per-peer types
  do r = 1, np
    bdispls(r) = displs(r) * 4
    brdispls(r) = rdispls(r) * 4
    types(r) = MPI_INTEGER
    rtypes(r) = MPI_INTEGER
  end do
  rbuf = -1
  call MPI_ALLTOALLW(sbuf, counts, bdispls, types, rbuf, rcounts, brdispls, rtypes, &
       MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS, 'alltoallw')
  do r = 0, np - 1
    call expect(all(rbuf(rdispls(r + 1) + 1:rdispls(r + 1) + rank + 1) == &
         [(r * 1000 + rank * 10 + k, k = 1, rank + 1)]), 'alltoallw data')
  end do

  call MPI_ALLREDUCE(nfail, k, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (k /= 0) call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
  call MPI_FINALIZE(ierr)
  if (rank == 0) print *, 'collectives: OK on', np, 'ranks'

contains
  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      print *, 'FAIL rank', rank, ': ', what
      nfail = nfail + 1
    end if
  end subroutine expect
  ! counts r+1, blocks in reverse rank order
  subroutine layout(np, counts, displs)
    integer, intent(in) :: np
    integer, intent(out) :: counts(*), displs(*)
    integer :: r, off
    off = 0
    do r = np - 1, 0, -1
      counts(r + 1) = r + 1
      displs(r + 1) = off
      off = off + r + 1
    end do
  end subroutine layout
end program collectives
