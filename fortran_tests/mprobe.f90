! Matched probes through `use mpi`: MPI_MPROBE with MPI_ANY_SOURCE and the status
! (MPI_SOURCE, MPI_TAG, GET_COUNT), MPI_MRECV (handle becomes MPI_MESSAGE_NULL);
! a matched message is not seen by a later PROBE/RECV; MPI_IMPROBE loop + MPI_IMRECV +
! MPI_WAITALL with an eager and a large (rendezvous) message; MPI_PROC_NULL gives
! MPI_MESSAGE_NO_PROC and an empty status; MRECV of MPI_MESSAGE_NULL is an error of
! class MPI_ERR_REQUEST under MPI_ERRORS_RETURN.
program mprobe
  use mpi
  implicit none
  integer, parameter :: big = 300000
  integer :: rank, np, ierr, i, nxt, prv, cnt, msg, msg2, nfail, cls, k
  integer :: st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 4), reqs(4)
  integer :: sa(7), sb(3), ra(7), rb(3)
  integer, allocatable :: sbig(:), rbig(:)
  logical :: flag

  nfail = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  nxt = mod(rank + 1, np)
  prv = mod(rank + np - 1, np)

  ! ---- A (7 ints) then B (3 ints), same tag; MPROBE matches A, PROBE and RECV see B
  sa = [(rank * 100 + i, i = 1, 7)]
  sb = [(rank * 100 + 50 + i, i = 1, 3)]
  call MPI_ISEND(sa, 7, MPI_INTEGER, nxt, 5, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_ISEND(sb, 3, MPI_INTEGER, nxt, 5, MPI_COMM_WORLD, reqs(2), ierr)
  msg = MPI_MESSAGE_NULL
  call MPI_MPROBE(MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, msg, st, ierr)
  call expect(ierr == MPI_SUCCESS .and. msg /= MPI_MESSAGE_NULL, 'mprobe')
  call expect(st(MPI_SOURCE) == prv .and. st(MPI_TAG) == 5, 'mprobe status')
  call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
  call expect(cnt == 7, 'get_count of the mprobe status')
  call MPI_PROBE(prv, 5, MPI_COMM_WORLD, st, ierr)
  call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
  call expect(cnt == 3, 'probe after mprobe sees B')
  rb = -1
  call MPI_RECV(rb, 7, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, st, ierr)
  call expect(all(rb == [(prv * 100 + 50 + i, i = 1, 3)]), 'recv after mprobe gets B')
  ra = -1
  call MPI_MRECV(ra, 7, MPI_INTEGER, msg, st, ierr)
  call expect(ierr == MPI_SUCCESS .and. msg == MPI_MESSAGE_NULL, 'mrecv ierr / handle')
  call expect(all(ra == [(prv * 100 + i, i = 1, 7)]), 'mrecv data')
  call expect(st(MPI_SOURCE) == prv .and. st(MPI_TAG) == 5, 'mrecv status')
  call MPI_WAITALL(2, reqs, MPI_STATUSES_IGNORE, ierr)

  ! ---- IMPROBE + IMRECV + WAITALL: a large (rendezvous) and a small message
  allocate(sbig(big), rbig(big))
  sbig = [(rank * 7 + i, i = 1, big)]
  rbig = -1
  call MPI_ISEND(sbig, big, MPI_INTEGER, nxt, 6, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_ISEND(sa, 2, MPI_INTEGER, nxt, 7, MPI_COMM_WORLD, reqs(2), ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_IMPROBE(prv, 6, MPI_COMM_WORLD, flag, msg, st, ierr)
  end do
  call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
  call expect(cnt == big, 'improbe count of the large message')
  flag = .false.
  do while (.not. flag)
    call MPI_IMPROBE(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, flag, msg2, st, ierr)
  end do
  call expect(st(MPI_TAG) == 7, 'improbe(any, any) skips the matched message')
  ra = -1
  call MPI_IMRECV(rbig, big, MPI_INTEGER, msg, reqs(3), ierr)
  call MPI_IMRECV(ra, 7, MPI_INTEGER, msg2, reqs(4), ierr)
  call expect(msg == MPI_MESSAGE_NULL .and. msg2 == MPI_MESSAGE_NULL, 'imrecv handles')
  call MPI_WAITALL(4, reqs, sts, ierr)
  call expect(ierr == MPI_SUCCESS, 'waitall ierr')
  call expect(all(rbig == [(prv * 7 + i, i = 1, big)]), 'imrecv large data')
  call expect(all(ra(1:2) == [(prv * 100 + i, i = 1, 2)]) .and. ra(3) == -1, 'imrecv small data')
  call MPI_GET_COUNT(sts(:, 4), MPI_INTEGER, cnt, ierr)
  call expect(cnt == 2 .and. sts(MPI_SOURCE, 4) == prv, 'imrecv status')
  deallocate(sbig, rbig)

  ! ---- MPI_PROC_NULL
  call MPI_MPROBE(MPI_PROC_NULL, 1, MPI_COMM_WORLD, msg, st, ierr)
  call expect(msg == MPI_MESSAGE_NO_PROC, 'mprobe(MPI_PROC_NULL)')
  call expect(st(MPI_SOURCE) == MPI_PROC_NULL .and. st(MPI_TAG) == MPI_ANY_TAG, 'proc_null status')
  ra = -1
  call MPI_MRECV(ra, 7, MPI_INTEGER, msg, st, ierr)
  call expect(ierr == MPI_SUCCESS .and. msg == MPI_MESSAGE_NULL .and. all(ra == -1), 'mrecv(no_proc)')
  call MPI_GET_COUNT(st, MPI_INTEGER, cnt, ierr)
  call expect(cnt == 0 .and. st(MPI_SOURCE) == MPI_PROC_NULL, 'mrecv(no_proc) status')

  ! ---- MPI_MESSAGE_NULL is not a message
  msg = MPI_MESSAGE_NULL
  call MPI_MRECV(ra, 7, MPI_INTEGER, msg, st, ierr)
  call expect(ierr /= MPI_SUCCESS, 'mrecv(MPI_MESSAGE_NULL) succeeded')
  call MPI_ERROR_CLASS(ierr, cls, ierr)
  call expect(cls == MPI_ERR_REQUEST, 'mrecv(MPI_MESSAGE_NULL) class')

  call MPI_ALLREDUCE(nfail, k, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (k /= 0) call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
  call MPI_FINALIZE(ierr)
  if (rank == 0) print *, 'mprobe: OK on', np, 'ranks'

contains
  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      print *, 'FAIL rank', rank, ': ', what
      nfail = nfail + 1
    end if
  end subroutine expect
end program mprobe
