! Point-to-point through `use mpi`: statuses (MPI_SOURCE, MPI_TAG, MPI_ERROR
! indices, GET_COUNT, GET_ELEMENTS), MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE,
! SEND/RECV with wildcards, SSEND, RSEND, BSEND with BUFFER_ATTACH/DETACH,
! ISEND/IRECV with WAIT, WAITALL, WAITANY, WAITSOME, TEST, TESTALL, TESTANY,
! TESTSOME (1-based indices, MPI_UNDEFINED), PROBE/IPROBE, SENDRECV,
! SENDRECV_REPLACE, REQUEST_GET_STATUS, REQUEST_FREE, CANCEL/TEST_CANCELLED,
! and MPI_PROC_NULL; GREQUEST_START / GREQUEST_COMPLETE with Fortran callbacks (on
! the caller's EXTRA_STATE variable); ISENDRECV / ISENDRECV_REPLACE.
! The C library's view of the Fortran ignore values (MPI-3.1 17.2.5).
module cview
  use iso_c_binding
  implicit none
  type(c_ptr), bind(C, name='MPI_F_STATUS_IGNORE') :: f_status_ignore
  type(c_ptr), bind(C, name='MPI_F_STATUSES_IGNORE') :: f_statuses_ignore
end module cview

! Generalized request callbacks (every argument by reference).
module greqcb
  implicit none
  integer :: nquery = 0, nfree = 0, ncancel = 0, lastcomplete = -1
contains
  subroutine query_fn(extra, status, ierror)
    use mpi
    integer(kind=MPI_ADDRESS_KIND) :: extra
    integer :: status(MPI_STATUS_SIZE), ierror
    nquery = nquery + 1
    status(MPI_SOURCE) = MPI_UNDEFINED
    status(MPI_TAG) = int(extra)
    call MPI_STATUS_SET_ELEMENTS(status, MPI_INTEGER, 3, ierror)
    ierror = MPI_SUCCESS
  end subroutine query_fn
  subroutine free_fn(extra, ierror)
    use mpi
    integer(kind=MPI_ADDRESS_KIND) :: extra
    integer :: ierror
    nfree = nfree + int(extra)
    extra = extra + 1
    ierror = MPI_SUCCESS
  end subroutine free_fn
  subroutine cancel_fn(extra, complete, ierror)
    use mpi
    integer(kind=MPI_ADDRESS_KIND) :: extra
    logical :: complete
    integer :: ierror
    ncancel = ncancel + 1
    lastcomplete = merge(1, 0, complete)
    ierror = MPI_SUCCESS
  end subroutine cancel_fn
end module greqcb

program p2p
  use mpi
  use cview
  use greqcb
  implicit none
  integer :: rank, np, ierr, i, k, nxt, prv, cnt, idx, outcount, nfail
  integer :: st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 8)
  integer :: reqs(8), indices(8)
  integer(kind=MPI_ADDRESS_KIND) :: gextra
  integer :: sbuf(10), rbuf(10), rbufs(10, 8)
  double precision :: dsend(3), drecv(3)
  integer, parameter :: bsize = 4096
  character :: attached(bsize)
  logical :: flag
  integer :: tag

  nfail = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  nxt = mod(rank + 1, np)
  prv = mod(rank + np - 1, np)

  ! ---- ring: SENDRECV with a full status
  sbuf = [(rank * 100 + i, i = 1, 10)]
  rbuf = -1
  st = -5
  call MPI_SENDRECV(sbuf, 7, MPI_INTEGER, nxt, 11, rbuf, 10, MPI_INTEGER, &
       prv, 11, MPI_COMM_WORLD, st, ierr)
  call expect(ierr == MPI_SUCCESS, 'sendrecv ierr')
  call expect(all(rbuf(1:7) == [(prv * 100 + i, i = 1, 7)]), 'sendrecv data')
  call expect(rbuf(8) == -1, 'sendrecv wrote past the message')
  call expect(st(MPI_SOURCE) == prv, 'sendrecv status(MPI_SOURCE)')
  call expect(st(MPI_TAG) == 11, 'sendrecv status(MPI_TAG)')
  call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
  call expect(ierr == MPI_SUCCESS .and. cnt == 7, 'get_count')
  call MPI_GET_ELEMENTS(st, MPI_INTEGER, cnt, ierr)
  call expect(cnt == 7, 'get_elements')
  call MPI_GET_COUNT(st, MPI_DOUBLE_PRECISION, cnt, ierr)
  call expect(cnt == MPI_UNDEFINED, 'get_count of a partial double')

  ! ---- SENDRECV_REPLACE with MPI_STATUS_IGNORE
  rbuf = sbuf
  call MPI_SENDRECV_REPLACE(rbuf, 10, MPI_INTEGER, prv, 12, nxt, 12, &
       MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call expect(ierr == MPI_SUCCESS, 'sendrecv_replace ierr')
  call expect(all(rbuf == [(nxt * 100 + i, i = 1, 10)]), 'sendrecv_replace data')

  ! ---- blocking send modes, rank 0 collects from everyone with MPI_ANY_SOURCE
  if (rank /= 0) then
    dsend = [dble(rank), 0.5d0, -dble(rank)]
    call MPI_SEND(dsend, 3, MPI_DOUBLE_PRECISION, 0, 20 + rank, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS, 'send')
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    call MPI_SSEND(dsend, 2, MPI_DOUBLE_PRECISION, 0, 40, MPI_COMM_WORLD, ierr)
    call expect(ierr == MPI_SUCCESS, 'ssend')
  else
    do k = 1, np - 1
      call MPI_PROBE(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, st, ierr)
      call expect(ierr == MPI_SUCCESS, 'probe')
      call MPI_GET_COUNT(st, MPI_DOUBLE_PRECISION, cnt, ierr)
      call expect(cnt == 3 .and. st(MPI_TAG) == 20 + st(MPI_SOURCE), 'probe status')
      call MPI_RECV(drecv, 3, MPI_DOUBLE_PRECISION, st(MPI_SOURCE), MPI_ANY_TAG, &
           MPI_COMM_WORLD, st, ierr)
      i = st(MPI_SOURCE)
      call expect(all(drecv == [dble(i), 0.5d0, -dble(i)]), 'recv after probe')
    end do
    call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    do k = 1, np - 1
      call MPI_RECV(drecv, 3, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 40, &
           MPI_COMM_WORLD, st, ierr)
      call expect(ierr == MPI_SUCCESS, 'recv ssend')
      call MPI_GET_COUNT(st, MPI_DOUBLE_PRECISION, cnt, ierr)
      call expect(cnt == 2 .and. drecv(1) == dble(st(MPI_SOURCE)), 'recv ssend data')
    end do
  end if

  ! ---- buffered send to the next rank, received with IPROBE polling
  call MPI_BUFFER_ATTACH(attached, bsize, ierr)
  call expect(ierr == MPI_SUCCESS, 'buffer_attach')
  sbuf = rank
  call MPI_BSEND(sbuf, 10, MPI_INTEGER, nxt, 30, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS, 'bsend')
  flag = .false.
  do while (.not. flag)
    call MPI_IPROBE(prv, 30, MPI_COMM_WORLD, flag, st, ierr)
  end do
  call expect(st(MPI_SOURCE) == prv .and. st(MPI_TAG) == 30, 'iprobe status')
  call MPI_RECV(rbuf, 10, MPI_INTEGER, prv, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call expect(all(rbuf == prv), 'recv bsend data')
  call MPI_BUFFER_DETACH(attached, cnt, ierr)
  call expect(ierr == MPI_SUCCESS .and. cnt == bsize, 'buffer_detach size')

  ! ---- nonblocking: every rank sends 4 messages to the next; WAITALL
  do k = 1, 4
    sbuf(k) = rank * 10 + k
    call MPI_IRECV(rbufs(1, k), 1, MPI_INTEGER, prv, 50 + k, MPI_COMM_WORLD, reqs(k), ierr)
    call expect(ierr == MPI_SUCCESS, 'irecv')
  end do
  call MPI_ISEND(sbuf(1), 1, MPI_INTEGER, nxt, 51, MPI_COMM_WORLD, reqs(5), ierr)
  call MPI_ISSEND(sbuf(2), 1, MPI_INTEGER, nxt, 52, MPI_COMM_WORLD, reqs(6), ierr)
  call MPI_ISEND(sbuf(3), 1, MPI_INTEGER, nxt, 53, MPI_COMM_WORLD, reqs(7), ierr)
  call MPI_ISEND(sbuf(4), 1, MPI_INTEGER, nxt, 54, MPI_COMM_WORLD, reqs(8), ierr)
  call MPI_WAITALL(8, reqs, sts, ierr)
  call expect(ierr == MPI_SUCCESS, 'waitall')
  do k = 1, 4
    call expect(rbufs(1, k) == prv * 10 + k, 'waitall data')
    call expect(sts(MPI_SOURCE, k) == prv .and. sts(MPI_TAG, k) == 50 + k, 'waitall statuses')
    call expect(reqs(k) == MPI_REQUEST_NULL, 'waitall frees requests')
  end do

  ! ---- WAITANY: 1-based index; all null -> MPI_UNDEFINED
  call MPI_IRECV(rbuf, 1, MPI_INTEGER, prv, 60, MPI_COMM_WORLD, reqs(2), ierr)
  reqs(1) = MPI_REQUEST_NULL
  reqs(3) = MPI_REQUEST_NULL
  call MPI_SEND(rank, 1, MPI_INTEGER, nxt, 60, MPI_COMM_WORLD, ierr)
  call MPI_WAITANY(3, reqs, idx, st, ierr)
  call expect(ierr == MPI_SUCCESS, 'waitany')
  call expect(idx == 2, 'waitany index is 1-based')
  call expect(st(MPI_SOURCE) == prv .and. rbuf(1) == prv, 'waitany status')
  call MPI_WAITANY(3, reqs, idx, st, ierr)
  call expect(idx == MPI_UNDEFINED, 'waitany with no active request')
  call MPI_TESTANY(3, reqs, idx, flag, st, ierr)
  call expect(flag .and. idx == MPI_UNDEFINED, 'testany with no active request')

  ! ---- WAITSOME / TESTSOME
  do k = 1, 3
    call MPI_IRECV(rbufs(1, k), 1, MPI_INTEGER, prv, 70 + k, MPI_COMM_WORLD, reqs(k), ierr)
  end do
  do k = 3, 1, -1
    call MPI_SEND(rank + k, 1, MPI_INTEGER, nxt, 70 + k, MPI_COMM_WORLD, ierr)
  end do
  cnt = 0
  do while (cnt < 3)
    call MPI_WAITSOME(3, reqs, outcount, indices, sts, ierr)
    call expect(ierr == MPI_SUCCESS .and. outcount >= 1, 'waitsome')
    do k = 1, outcount
      i = indices(k)
      call expect(i >= 1 .and. i <= 3, 'waitsome index is 1-based')
      call expect(sts(MPI_TAG, k) == 70 + i, 'waitsome status matches index')
      call expect(rbufs(1, i) == prv + i, 'waitsome data')
    end do
    cnt = cnt + outcount
  end do
  call MPI_WAITSOME(3, reqs, outcount, indices, MPI_STATUSES_IGNORE, ierr)
  call expect(outcount == MPI_UNDEFINED, 'waitsome with no active request')
  do k = 1, 2
    call MPI_IRECV(rbufs(1, k), 1, MPI_INTEGER, prv, 80 + k, MPI_COMM_WORLD, reqs(k), ierr)
    call MPI_SEND(rank * k, 1, MPI_INTEGER, nxt, 80 + k, MPI_COMM_WORLD, ierr)
  end do
  cnt = 0
  do while (cnt < 2)
    call MPI_TESTSOME(2, reqs, outcount, indices, MPI_STATUSES_IGNORE, ierr)
    call expect(ierr == MPI_SUCCESS, 'testsome')
    do k = 1, outcount
      call expect(indices(k) >= 1 .and. indices(k) <= 2, 'testsome index is 1-based')
      call expect(rbufs(1, indices(k)) == prv * indices(k), 'testsome data')
    end do
    cnt = cnt + outcount
  end do

  ! ---- TEST, TESTALL, TESTANY, REQUEST_GET_STATUS
  call MPI_IRECV(rbuf, 2, MPI_INTEGER, prv, 90, MPI_COMM_WORLD, reqs(1), ierr)
  sbuf(1:2) = [rank, -rank]
  call MPI_ISEND(sbuf, 2, MPI_INTEGER, nxt, 90, MPI_COMM_WORLD, reqs(2), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_REQUEST_GET_STATUS(reqs(1), flag, st, ierr)
  end do
  call expect(st(MPI_SOURCE) == prv .and. reqs(1) /= MPI_REQUEST_NULL, 'request_get_status')
  flag = .false.
  do while (.not. flag)
    call MPI_TEST(reqs(1), flag, st, ierr)
  end do
  call expect(reqs(1) == MPI_REQUEST_NULL .and. st(MPI_TAG) == 90, 'test')
  call expect(rbuf(1) == prv .and. rbuf(2) == -prv, 'test data')
  flag = .false.
  do while (.not. flag)
    call MPI_TESTALL(2, reqs, flag, MPI_STATUSES_IGNORE, ierr)
  end do
  call expect(ierr == MPI_SUCCESS .and. reqs(2) == MPI_REQUEST_NULL, 'testall')
  call MPI_IRECV(rbuf, 1, MPI_INTEGER, prv, 91, MPI_COMM_WORLD, reqs(2), ierr)
  reqs(1) = MPI_REQUEST_NULL
  call MPI_SEND(rank, 1, MPI_INTEGER, nxt, 91, MPI_COMM_WORLD, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_TESTANY(2, reqs, idx, flag, MPI_STATUS_IGNORE, ierr)
  end do
  call expect(idx == 2 .and. rbuf(1) == prv, 'testany index is 1-based')

  ! ---- REQUEST_FREE of a send; CANCEL of a receive that never matches
  call MPI_ISEND(sbuf, 1, MPI_INTEGER, nxt, 95, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_REQUEST_FREE(reqs(1), ierr)
  call expect(ierr == MPI_SUCCESS .and. reqs(1) == MPI_REQUEST_NULL, 'request_free')
  call MPI_RECV(rbuf, 1, MPI_INTEGER, prv, 95, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call MPI_IRECV(rbuf, 1, MPI_INTEGER, prv, 999, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_CANCEL(reqs(1), ierr)
  call expect(ierr == MPI_SUCCESS, 'cancel')
  call MPI_WAIT(reqs(1), st, ierr)
  call MPI_TEST_CANCELLED(st, flag, ierr)
  call expect(ierr == MPI_SUCCESS .and. flag, 'test_cancelled')

  ! ---- persistent requests: SEND_INIT / RECV_INIT, started again and again
  call MPI_SEND_INIT(sbuf, 10, MPI_INTEGER, nxt, 96, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_RECV_INIT(rbuf, 10, MPI_INTEGER, prv, 96, MPI_COMM_WORLD, reqs(2), ierr)
  call expect(ierr == MPI_SUCCESS, 'send_init/recv_init')
  do k = 1, 5
    sbuf = (/ (1000 * rank + 10 * k + i, i = 1, 10) /)
    call MPI_STARTALL(2, reqs, ierr)
    call MPI_WAITALL(2, reqs, sts, ierr)
    call expect(all(rbuf == (/ (1000 * prv + 10 * k + i, i = 1, 10) /)), 'persistent exchange')
    call expect(reqs(1) /= MPI_REQUEST_NULL .and. reqs(2) /= MPI_REQUEST_NULL, 'persistent handles kept')
  end do
  call MPI_SSEND_INIT(sbuf, 10, MPI_INTEGER, nxt, 97, MPI_COMM_WORLD, reqs(3), ierr)
  ! a receive freed while active still takes the next tag-96 message
  call MPI_START(reqs(2), ierr)
  call MPI_REQUEST_FREE(reqs(2), ierr)
  call MPI_START(reqs(3), ierr)
  call MPI_START(reqs(1), ierr)
  call MPI_RECV(rbufs(1, 1), 10, MPI_INTEGER, prv, 97, MPI_COMM_WORLD, st, ierr)
  call expect(all(rbufs(1:10, 1) == (/ (1000 * prv + 50 + i, i = 1, 10) /)), 'persistent ssend')
  call MPI_WAIT(reqs(3), st, ierr)
  call MPI_WAIT(reqs(1), st, ierr)
  call MPI_REQUEST_FREE(reqs(1), ierr)
  call MPI_REQUEST_FREE(reqs(3), ierr)
  call expect(ierr == MPI_SUCCESS .and. reqs(1) == MPI_REQUEST_NULL, 'persistent request_free')
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)

  ! ---- MPI_PROC_NULL: empty status
  call MPI_RECV(rbuf, 1, MPI_INTEGER, MPI_PROC_NULL, 1, MPI_COMM_WORLD, st, ierr)
  call expect(st(MPI_SOURCE) == MPI_PROC_NULL .and. st(MPI_TAG) == MPI_ANY_TAG, 'recv from MPI_PROC_NULL')
  call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
  call expect(cnt == 0, 'count from MPI_PROC_NULL')
  call MPI_RSEND(sbuf, 1, MPI_INTEGER, MPI_PROC_NULL, 1, MPI_COMM_WORLD, ierr)
  call expect(ierr == MPI_SUCCESS, 'rsend to MPI_PROC_NULL')
  tag = 0

  ! ---- ISENDRECV / ISENDRECV_REPLACE around the ring
  sbuf = (/ (100 * rank + i, i = 1, 10) /)
  rbuf = -1
  call MPI_ISENDRECV(sbuf, 10, MPI_INTEGER, nxt, 77, rbuf, 10, MPI_INTEGER, prv, 77, &
                     MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_WAIT(reqs(1), st, ierr)
  call expect(all(rbuf == (/ (100 * prv + i, i = 1, 10) /)) .and. st(MPI_SOURCE) == prv, 'isendrecv')
  call MPI_ISENDRECV_REPLACE(sbuf, 10, MPI_INTEGER, nxt, 78, prv, 78, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_WAIT(reqs(1), st, ierr)
  call expect(all(sbuf == (/ (100 * prv + i, i = 1, 10) /)), 'isendrecv_replace')

  ! ---- generalized requests: the query callback's status, free after query
  gextra = 42
  call MPI_GREQUEST_START(query_fn, free_fn, cancel_fn, gextra, reqs(1), ierr)
  call expect(ierr == MPI_SUCCESS .and. reqs(1) /= MPI_REQUEST_NULL, 'grequest_start')
  call MPI_TEST(reqs(1), flag, st, ierr)
  call expect(.not. flag, 'generalized request complete too early')
  call MPI_CANCEL(reqs(1), ierr)
  call expect(ncancel == 1 .and. lastcomplete == 0, 'cancel callback before completion')
  call MPI_GREQUEST_COMPLETE(reqs(1), ierr)
  call MPI_CANCEL(reqs(1), ierr)
  call expect(ncancel == 2 .and. lastcomplete == 1, 'cancel callback after completion')
  call MPI_WAIT(reqs(1), st, ierr)
  call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
  call expect(reqs(1) == MPI_REQUEST_NULL .and. st(MPI_TAG) == 42 .and. cnt == 3, 'grequest status')
  call expect(nquery == 1 .and. nfree == 42, 'grequest query and free callbacks')
  ! (the callbacks get the caller's EXTRA_STATE variable itself, as with MPICH)
  call expect(gextra == 43, 'grequest free callback updates EXTRA_STATE')

  ! ---- C's MPI_F_STATUS_IGNORE / MPI_F_STATUSES_IGNORE are these COMMON members
  call expect(transfer(f_status_ignore, 0_8) == loc(MPI_STATUS_IGNORE), 'MPI_F_STATUS_IGNORE')
  call expect(transfer(f_statuses_ignore, 0_8) == loc(MPI_STATUSES_IGNORE), 'MPI_F_STATUSES_IGNORE')

  call MPI_ALLREDUCE(nfail, k, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (k /= 0) call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
  call MPI_FINALIZE(ierr)
  if (rank == 0) print *, 'p2p: OK on', np, 'ranks'

contains
  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      print *, 'FAIL rank', rank, ': ', what
      nfail = nfail + 1
    end if
  end subroutine expect
end program p2p
