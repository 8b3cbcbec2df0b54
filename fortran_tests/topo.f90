! Process topologies through `use mpi`, checked against values computed here:
! DIMS_CREATE, CART_CREATE with a LOGICAL periods array, TOPO_TEST, CARTDIM_GET,
! CART_GET (LOGICAL periods out), CART_COORDS / CART_RANK (row-major), CART_SHIFT
! (periodic and not), CART_SUB with a LOGICAL remain_dims array, CART_MAP,
! GRAPH_CREATE / GRAPH_NEIGHBORS_COUNT / GRAPH_NEIGHBORS,
! DIST_GRAPH_CREATE_ADJACENT with weights and with MPI_UNWEIGHTED,
! DIST_GRAPH_NEIGHBORS_COUNT (LOGICAL weighted) / DIST_GRAPH_NEIGHBORS,
! NEIGHBOR_ALLGATHER / INEIGHBOR_ALLTOALL on a ring, and the persistent
! NEIGHBOR_*_INIT forms started twice each.
program topo
  use mpi
  implicit none
  integer :: rank, np, ierr, nfail, k, i, t, nd, cart, sub, r, src, dst, ssize, srank, map
  integer :: dims(2), coords(2), c2(2), gdims(2), gcoords(2), d3(3)
  logical :: periods(2), gperiods(2), remain(2), weighted
  integer :: g, cnt, nb(2), idx(64), edges(128), dg, indeg, outdeg
  integer :: srcs(2), dsts(2), sw(2), dw(2), gs(2), gd(2), gsw(2), gdw(2)
  integer :: ring, nreq, nsend(2), nrecv(2), pr(5), cnts(2), dsp(2), tys(2)
  ! (the buffers of the persistent requests: read and written by MPI_START and MPI_WAIT,
  ! which do not name them)
  integer, volatile :: pk, psend(2), precv(2)
  integer(kind=MPI_ADDRESS_KIND) :: wdsp(2)

  nfail = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)

  call MPI_TOPO_TEST(MPI_COMM_WORLD, t, ierr)
  call expect(ierr == MPI_SUCCESS .and. t == MPI_UNDEFINED, 'topo_test world')

  ! ---- DIMS_CREATE: balanced, non-increasing, honouring a fixed entry
  dims = 0
  call MPI_DIMS_CREATE(np, 2, dims, ierr)
  call expect(ierr == MPI_SUCCESS .and. dims(1) * dims(2) == np .and. dims(1) >= dims(2), 'dims_create')
  call expect(dims(1) - dims(2) == least_spread(np), 'dims_create balanced')
  d3 = (/ 0, 3, 0 /)
  call MPI_DIMS_CREATE(36, 3, d3, ierr)
  call expect(ierr == MPI_SUCCESS .and. d3(1) == 4 .and. d3(2) == 3 .and. d3(3) == 3, 'dims_create fixed entry')

  ! ---- CART_CREATE: periodic in the first dimension only
  periods = (/ .true., .false. /)
  call MPI_CART_CREATE(MPI_COMM_WORLD, 2, dims, periods, .false., cart, ierr)
  call expect(ierr == MPI_SUCCESS .and. cart /= MPI_COMM_NULL, 'cart_create')
  call MPI_TOPO_TEST(cart, t, ierr)
  call expect(t == MPI_CART, 'topo_test cart')
  call MPI_CARTDIM_GET(cart, nd, ierr)
  call expect(nd == 2, 'cartdim_get')
  gperiods = (/ .false., .true. /)
  call MPI_CART_GET(cart, 2, gdims, gperiods, gcoords, ierr)
  call expect(ierr == MPI_SUCCESS .and. all(gdims == dims), 'cart_get dims')
  call expect(gperiods(1) .and. .not. gperiods(2), 'cart_get periods (LOGICAL)')
  call expect(gcoords(1) == rank / dims(2) .and. gcoords(2) == mod(rank, dims(2)), 'cart_get coords (row-major)')
  do i = 0, np - 1
    call MPI_CART_COORDS(cart, i, 2, coords, ierr)
    call expect(coords(1) == i / dims(2) .and. coords(2) == mod(i, dims(2)), 'cart_coords')
    call MPI_CART_RANK(cart, coords, r, ierr)
    call expect(r == i, 'cart_rank')
  end do
  ! A periodic coordinate wraps.
  c2 = (/ gcoords(1) + dims(1), gcoords(2) /)
  call MPI_CART_RANK(cart, c2, r, ierr)
  call expect(ierr == MPI_SUCCESS .and. r == rank, 'cart_rank wraps a periodic coordinate')
  ! Shifts: periodic along dimension 0, MPI_PROC_NULL at the edges of dimension 1.
  call MPI_CART_SHIFT(cart, 0, 1, src, dst, ierr)
  call expect(src == mod(gcoords(1) - 1 + dims(1), dims(1)) * dims(2) + gcoords(2), 'cart_shift periodic source')
  call expect(dst == mod(gcoords(1) + 1, dims(1)) * dims(2) + gcoords(2), 'cart_shift periodic dest')
  call MPI_CART_SHIFT(cart, 1, 1, src, dst, ierr)
  if (gcoords(2) == 0) then
    call expect(src == MPI_PROC_NULL, 'cart_shift: no source at the edge')
  else
    call expect(src == rank - 1, 'cart_shift source')
  end if
  if (gcoords(2) == dims(2) - 1) then
    call expect(dst == MPI_PROC_NULL, 'cart_shift: no dest at the edge')
  else
    call expect(dst == rank + 1, 'cart_shift dest')
  end if

  ! ---- CART_SUB keeping dimension 1: the rows
  remain = (/ .false., .true. /)
  call MPI_CART_SUB(cart, remain, sub, ierr)
  call expect(ierr == MPI_SUCCESS .and. sub /= MPI_COMM_NULL, 'cart_sub')
  call MPI_COMM_SIZE(sub, ssize, ierr)
  call MPI_COMM_RANK(sub, srank, ierr)
  call expect(ssize == dims(2) .and. srank == gcoords(2), 'cart_sub size/rank')
  call MPI_CARTDIM_GET(sub, nd, ierr)
  call MPI_CART_GET(sub, 1, gdims, gperiods, gcoords, ierr)
  call expect(nd == 1 .and. gdims(1) == dims(2) .and. .not. gperiods(1), 'cart_sub topology')
  call MPI_COMM_FREE(sub, ierr)
  call MPI_COMM_FREE(cart, ierr)
  call expect(cart == MPI_COMM_NULL, 'comm_free cart')
  call MPI_CART_MAP(MPI_COMM_WORLD, 1, (/ 1 /), (/ .true. /), map, ierr)
  if (rank == 0) then
    call expect(map == 0, 'cart_map rank 0')
  else
    call expect(map == MPI_UNDEFINED, 'cart_map beyond the grid')
  end if

  ! ---- GRAPH_CREATE: a ring
  do i = 1, np
    idx(i) = 2 * i
    edges(2 * i - 1) = mod(i, np)
    edges(2 * i) = mod(i - 2 + np, np)
  end do
  call MPI_GRAPH_CREATE(MPI_COMM_WORLD, np, idx, edges, .false., g, ierr)
  call MPI_TOPO_TEST(g, t, ierr)
  call expect(ierr == MPI_SUCCESS .and. t == MPI_GRAPH, 'graph_create')
  call MPI_GRAPH_NEIGHBORS_COUNT(g, rank, cnt, ierr)
  call MPI_GRAPH_NEIGHBORS(g, rank, 2, nb, ierr)
  call expect(cnt == 2 .and. nb(1) == mod(rank + 1, np) .and. nb(2) == mod(rank - 1 + np, np), 'graph_neighbors')
  call MPI_COMM_FREE(g, ierr)

  ! ---- DIST_GRAPH_CREATE_ADJACENT: in from rank-1, out to rank+1, weight 10*src+dst
  srcs(1) = mod(rank - 1 + np, np)
  dsts(1) = mod(rank + 1, np)
  sw(1) = 10 * srcs(1) + rank
  dw(1) = 10 * rank + dsts(1)
  call MPI_DIST_GRAPH_CREATE_ADJACENT(MPI_COMM_WORLD, 1, srcs, sw, 1, dsts, dw, MPI_INFO_NULL, .false., dg, ierr)
  call MPI_TOPO_TEST(dg, t, ierr)
  call expect(ierr == MPI_SUCCESS .and. t == MPI_DIST_GRAPH, 'dist_graph_create_adjacent')
  call MPI_DIST_GRAPH_NEIGHBORS_COUNT(dg, indeg, outdeg, weighted, ierr)
  call expect(indeg == 1 .and. outdeg == 1 .and. weighted, 'dist_graph_neighbors_count weighted')
  call MPI_DIST_GRAPH_NEIGHBORS(dg, 1, gs, gsw, 1, gd, gdw, ierr)
  call expect(gs(1) == srcs(1) .and. gsw(1) == sw(1) .and. gd(1) == dsts(1) .and. gdw(1) == dw(1), 'dist_graph_neighbors')
  call MPI_COMM_FREE(dg, ierr)
  call MPI_DIST_GRAPH_CREATE_ADJACENT(MPI_COMM_WORLD, 1, srcs, MPI_UNWEIGHTED, 1, dsts, MPI_UNWEIGHTED, &
                                      MPI_INFO_NULL, .true., dg, ierr)
  call MPI_DIST_GRAPH_NEIGHBORS_COUNT(dg, indeg, outdeg, weighted, ierr)
  call expect(ierr == MPI_SUCCESS .and. indeg == 1 .and. outdeg == 1 .and. .not. weighted, 'MPI_UNWEIGHTED')
  gs = -1
  call MPI_DIST_GRAPH_NEIGHBORS(dg, 1, gs, MPI_UNWEIGHTED, 1, gd, MPI_UNWEIGHTED, ierr)
  call expect(gs(1) == srcs(1) .and. gd(1) == dsts(1), 'dist_graph_neighbors unweighted')
  call MPI_COMM_FREE(dg, ierr)
  call MPI_DIST_GRAPH_CREATE_ADJACENT(MPI_COMM_WORLD, 0, srcs, MPI_WEIGHTS_EMPTY, 0, dsts, MPI_WEIGHTS_EMPTY, &
                                      MPI_INFO_NULL, .false., dg, ierr)
  call MPI_DIST_GRAPH_NEIGHBORS_COUNT(dg, indeg, outdeg, weighted, ierr)
  call expect(ierr == MPI_SUCCESS .and. indeg == 0 .and. outdeg == 0 .and. weighted, 'MPI_WEIGHTS_EMPTY')
  call MPI_COMM_FREE(dg, ierr)

  ! ---- neighbourhood collectives on a periodic ring: entries (left, right)
  call MPI_CART_CREATE(MPI_COMM_WORLD, 1, (/ np /), (/ .true. /), .false., ring, ierr)
  nrecv = -1
  call MPI_NEIGHBOR_ALLGATHER(rank, 1, MPI_INTEGER, nrecv, 1, MPI_INTEGER, ring, ierr)
  call expect(ierr == MPI_SUCCESS .and. nrecv(1) == mod(rank - 1 + np, np) .and. &
              nrecv(2) == mod(rank + 1, np), 'neighbor_allgather')
  ! what goes left arrives as the left neighbour's right entry, and the reverse
  nsend = (/ 10 * rank, 10 * rank + 1 /)
  nrecv = -1
  call MPI_INEIGHBOR_ALLTOALL(nsend, 1, MPI_INTEGER, nrecv, 1, MPI_INTEGER, ring, nreq, ierr)
  call MPI_WAIT(nreq, MPI_STATUS_IGNORE, ierr)
  call expect(ierr == MPI_SUCCESS .and. nrecv(1) == 10 * mod(rank - 1 + np, np) + 1 .and. &
              nrecv(2) == 10 * mod(rank + 1, np), 'ineighbor_alltoall')
  ! the persistent forms: each MPI_START runs the exchange again with the new data
  cnts = 1
  dsp = (/ 0, 1 /)
  wdsp = (/ 0_MPI_ADDRESS_KIND, 4_MPI_ADDRESS_KIND /)
  tys = MPI_INTEGER
  call MPI_NEIGHBOR_ALLGATHER_INIT(pk, 1, MPI_INTEGER, precv, 1, MPI_INTEGER, ring, MPI_INFO_NULL, pr(1), ierr)
  call MPI_NEIGHBOR_ALLGATHERV_INIT(pk, 1, MPI_INTEGER, precv, cnts, dsp, MPI_INTEGER, ring, MPI_INFO_NULL, &
                                    pr(2), ierr)
  call MPI_NEIGHBOR_ALLTOALL_INIT(psend, 1, MPI_INTEGER, precv, 1, MPI_INTEGER, ring, MPI_INFO_NULL, pr(3), ierr)
  call MPI_NEIGHBOR_ALLTOALLV_INIT(psend, cnts, dsp, MPI_INTEGER, precv, cnts, dsp, MPI_INTEGER, ring, &
                                   MPI_INFO_NULL, pr(4), ierr)
  call MPI_NEIGHBOR_ALLTOALLW_INIT(psend, cnts, wdsp, tys, precv, cnts, wdsp, tys, ring, MPI_INFO_NULL, &
                                   pr(5), ierr)
  call expect(ierr == MPI_SUCCESS, 'neighbor _init')
  do t = 1, 2
    do i = 1, 5
      pk = 100 * t + rank
      psend = (/ 100 * t + 10 * rank, 100 * t + 10 * rank + 1 /)
      precv = -1
      call MPI_START(pr(i), ierr)
      call MPI_WAIT(pr(i), MPI_STATUS_IGNORE, ierr)
      if (i <= 2) then
        call expect(ierr == MPI_SUCCESS .and. precv(1) == 100 * t + mod(rank - 1 + np, np) .and. &
                    precv(2) == 100 * t + mod(rank + 1, np), 'neighbor_allgather(v)_init')
      else
        call expect(ierr == MPI_SUCCESS .and. precv(1) == 100 * t + 10 * mod(rank - 1 + np, np) + 1 .and. &
                    precv(2) == 100 * t + 10 * mod(rank + 1, np), 'neighbor_alltoall(v,w)_init')
      end if
    end do
  end do
  do i = 1, 5
    call MPI_REQUEST_FREE(pr(i), ierr)
  end do
  call MPI_COMM_FREE(ring, ierr)

  call MPI_ALLREDUCE(nfail, k, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (k /= 0) call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
  call MPI_FINALIZE(ierr)
  if (rank == 0) print *, 'topo: OK on', np, 'ranks'

contains
  ! The least max - min over the factorisations n = a * b.
  integer function least_spread(n)
    integer, intent(in) :: n
    integer :: a
    least_spread = n - 1
    do a = 1, n
      if (mod(n, a) == 0 .and. a >= n / a) least_spread = min(least_spread, a - n / a)
    end do
  end function least_spread

  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      print *, 'FAIL rank', rank, ': ', what
      nfail = nfail + 1
    end if
  end subroutine expect
end program topo
