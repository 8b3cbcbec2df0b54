! MPI_Info from Fortran: CHARACTER keys and values (leading and trailing blanks stripped
! in, as the standard says, blank-padded out), LOGICAL flags, MPI-4 MPI_INFO_GET_STRING.
program finfo
  use mpi
  implicit none
  integer :: info, ierr, n, vlen, buflen
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
  ! Leading blanks of keys and values are stripped too, in every call that takes a key.
  call MPI_INFO_SET(info, '  spaced key ', '   spaced value  ', ierr)
  call MPI_INFO_GET(info, 'spaced key', 32, v, flag, ierr)
  call MPI_INFO_GET_VALUELEN(info, ' spaced key', vlen, flag, ierr)
  if (.not. flag .or. v /= 'spaced value' .or. vlen /= 12) then
    print *, 'FAIL blanks', flag, '[', trim(v), ']', vlen
    stop 4
  end if
  ! MPI_INFO_GET_STRING: BUFLEN characters at most, blank-padded; BUFLEN = the length.
  v = 'canary'
  buflen = 0
  call MPI_INFO_GET_STRING(info, 'spaced key', buflen, v, flag, ierr)
  if (ierr /= MPI_SUCCESS .or. .not. flag .or. buflen /= 12 .or. v /= 'canary') then
    print *, 'FAIL get_string 0', ierr, flag, buflen, '[', trim(v), ']'
    stop 5
  end if
  buflen = 6
  call MPI_INFO_GET_STRING(info, 'spaced key', buflen, v, flag, ierr)
  if (.not. flag .or. buflen /= 12 .or. v /= 'spaced') then
    print *, 'FAIL get_string 6', flag, buflen, '[', trim(v), ']'
    stop 6
  end if
  buflen = 32
  call MPI_INFO_GET_STRING(info, 'hint', buflen, v, flag, ierr)
  if (.not. flag .or. buflen /= 9 .or. v /= 'value one') then
    print *, 'FAIL get_string 32', flag, buflen, '[', trim(v), ']'
    stop 7
  end if
  v = 'canary'
  buflen = 32
  call MPI_INFO_GET_STRING(info, 'absent', buflen, v, flag, ierr)
  if (flag .or. buflen /= 32 .or. v /= 'canary') stop 8
  call MPI_INFO_DELETE(info, ' spaced key', ierr)
  call MPI_INFO_GET_NKEYS(info, n, ierr)
  if (n /= 1) stop 9
  call MPI_INFO_DELETE(info, 'hint', ierr)
  call MPI_INFO_GET(info, 'hint', 32, v, flag, ierr)
  if (flag) stop 2
  call MPI_INFO_FREE(info, ierr)
  if (info /= MPI_INFO_NULL) stop 3
  ! MPI_INFO_CREATE_ENV: a copy of MPI_INFO_ENV, whose "maxprocs" is the world's size.
  call MPI_INFO_CREATE_ENV(info, ierr)
  if (ierr /= MPI_SUCCESS) stop 10
  call MPI_INFO_GET(info, 'maxprocs', 32, v, flag, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, n, ierr)
  read (v, *) buflen
  if (.not. flag .or. buflen /= n) then
    print *, 'FAIL create_env maxprocs', flag, '[', trim(v), ']', n
    stop 11
  end if
  call MPI_INFO_GET(MPI_INFO_ENV, 'maxprocs', 32, v, flag, ierr)
  if (.not. flag) stop 12
  call MPI_INFO_FREE(info, ierr)
  print *, 'info ok'
  call MPI_FINALIZE(ierr)
end program
