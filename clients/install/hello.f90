! Built against an installed (and moved) tree by clients/install.sh and
! clients/meson.sh (`use mpi`): checks the version and a reduction.
program hello_f
  use mpi
  implicit none
  integer :: ierr, rank, nproc, total, v, sv
  logical :: ok
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nproc, ierr)
  call MPI_GET_VERSION(v, sv, ierr)
  call MPI_ALLREDUCE(rank, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  ok = total == nproc * (nproc - 1) / 2 .and. v == MPI_VERSION .and. sv == MPI_SUBVERSION
  if (rank == 0) then
    if (ok) then
      print '(a, i0, a, i0, a, i0, a)', 'hello_f np=', nproc, ' MPI ', v, '.', sv, ': ok'
    else
      print '(a, i0, a)', 'hello_f np=', nproc, ': FAIL'
    end if
  end if
  call MPI_FINALIZE(ierr)
  if (.not. ok) call exit(1)
end program hello_f
