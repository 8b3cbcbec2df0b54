! MPI_Info from Fortran: CHARACTER keys and values (trimmed in, blank-padded out), LOGICAL flags.
program finfo
  use mpi
  implicit none
  integer :: info, ierr, n, vlen
  logical :: flag
  character(len=32) :: v, k
  call MPI_INIT(ierr)
  call MPI_INFO_CREATE(info, ierr)
  call MPI_INFO_SET(info, 'hint   ', 'value one   ', ierr)
  call MPI_INFO_GET_NKEYS(info, n, ierr)
  call MPI_INFO_GET(info, 'hint', 32, v, flag, ierr)
  call MPI_INFO_GET_VALUELEN(info, 'hint', vlen, flag, ierr)
  call MPI_INFO_GET_NTHKEY(info, 0, k, ierr)
  if (n /= 1 .or. .not. flag .or. trim(v) /= 'value one' .or. vlen /= 9 .or. trim(k) /= 'hint') then
    print *, 'FAIL', n, flag, trim(v), vlen, trim(k)
    stop 1
  end if
  call MPI_INFO_DELETE(info, 'hint', ierr)
  call MPI_INFO_GET(info, 'hint', 32, v, flag, ierr)
  if (flag) stop 2
  call MPI_INFO_FREE(info, ierr)
  if (info /= MPI_INFO_NULL) stop 3
  print *, 'info ok'
  call MPI_FINALIZE(ierr)
end program
