! Fixed-form program with include 'mpif.h': CHARACTER arguments (hidden
! lengths, blank padding, trailing blanks trimmed on input), attributes
! (Fortran keys are C + 1), error classes and strings, error handlers
! (predefined and a Fortran one), INIT_THREAD and thread queries.
      PROGRAM ENV
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER IERR, RANK, NP, LEN, PROV, CLS, EH, EH2, K, NFAIL
      INTEGER IVAL, I
      INTEGER(KIND=MPI_ADDRESS_KIND) AVAL
      LOGICAL FLAG
      CHARACTER*(MPI_MAX_PROCESSOR_NAME) PNAME
      CHARACTER*(MPI_MAX_OBJECT_NAME) CNAME
      CHARACTER*5 SHORT
      CHARACTER*(MPI_MAX_ERROR_STRING) ESTR, ESTR2
      CHARACTER*(MPI_MAX_LIBRARY_VERSION_STRING) VSTR
      CHARACTER*256 HOST
      INTEGER NCALLS, LASTCODE, LASTCOMM
      COMMON /EHSEEN/ NCALLS, LASTCODE, LASTCOMM
      EXTERNAL MYHANDLER
      NFAIL = 0
      NCALLS = 0

      CALL MPI_INIT_THREAD(MPI_THREAD_FUNNELED, PROV, IERR)
      IF (IERR .NE. MPI_SUCCESS) STOP 1
      IF (PROV .LT. MPI_THREAD_SINGLE .OR.
     &   PROV .GT. MPI_THREAD_MULTIPLE)
     &   CALL FAIL('init_thread provided', NFAIL)
      CALL MPI_QUERY_THREAD(K, IERR)
      IF (K .NE. PROV) CALL FAIL('query_thread', NFAIL)
      CALL MPI_IS_THREAD_MAIN(FLAG, IERR)
      IF (.NOT. FLAG) CALL FAIL('is_thread_main', NFAIL)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)

!     Processor name: the host name, blank padded
      PNAME = '?'
      CALL MPI_GET_PROCESSOR_NAME(PNAME, LEN, IERR)
      IF (IERR .NE. MPI_SUCCESS) CALL FAIL('processor_name', NFAIL)
      IF (LEN .LE. 0 .OR. LEN .GT. MPI_MAX_PROCESSOR_NAME)
     &   CALL FAIL('processor_name resultlen', NFAIL)
      IF (PNAME(LEN+1:) .NE. ' ')
     &   CALL FAIL('processor_name blank padding', NFAIL)
      IF (INDEX(PNAME(1:LEN), ' ') .NE. 0)
     &   CALL FAIL('processor_name has a blank', NFAIL)
      CALL HOSTNM(HOST)
      IF (PNAME .NE. HOST(1:MPI_MAX_PROCESSOR_NAME))
     &   CALL FAIL('processor_name is not the host name', NFAIL)

!     Library version
      CALL MPI_GET_LIBRARY_VERSION(VSTR, LEN, IERR)
      IF (IERR .NE. 0 .OR. LEN .LE. 0 .OR. VSTR(LEN+1:) .NE. ' ')
     &   CALL FAIL('get_library_version', NFAIL)

!     Communicator names
      CNAME = 'garbage garbage garbage'
      CALL MPI_COMM_GET_NAME(MPI_COMM_WORLD, CNAME, LEN, IERR)
      IF (IERR .NE. 0) CALL FAIL('comm_get_name ierr', NFAIL)
      IF (CNAME .NE. 'MPI_COMM_WORLD' .OR. LEN .NE. 14)
     &   CALL FAIL('comm_get_name world', NFAIL)
      IF (CNAME(15:) .NE. ' ') CALL FAIL('comm_get_name pad', NFAIL)
      CALL MPI_COMM_GET_NAME(MPI_COMM_SELF, CNAME, LEN, IERR)
      IF (CNAME .NE. 'MPI_COMM_SELF' .OR. LEN .NE. 13)
     &   CALL FAIL('comm_get_name self', NFAIL)
      CALL MPI_COMM_GET_NAME(MPI_COMM_WORLD, SHORT, LEN, IERR)
!     Cut to the variable; RESULTLEN is 5 here (MPICH reports 14)
      IF (SHORT .NE. 'MPI_C' .OR. LEN .LT. 5)
     &   CALL FAIL('comm_get_name into CHARACTER*5', NFAIL)
      CALL MPI_COMM_SET_NAME(MPI_COMM_WORLD, 'all of us   ', IERR)
      IF (IERR .NE. 0) CALL FAIL('comm_set_name ierr', NFAIL)
      CNAME = 'x'
      CALL MPI_COMM_GET_NAME(MPI_COMM_WORLD, CNAME, LEN, IERR)
      IF (CNAME .NE. 'all of us' .OR. LEN .NE. 9)
     &   CALL FAIL('comm_set_name trims trailing blanks', NFAIL)

!     Predefined attributes (Fortran keys are the C keys + 1)
      CALL MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_TAG_UB, AVAL, FLAG,
     &   IERR)
      IF (IERR .NE. 0 .OR. .NOT. FLAG) CALL FAIL('get_attr tag_ub',
     &   NFAIL)
      IF (AVAL .LT. 32767 .OR. AVAL .GT. 2147483647_8)
     &   CALL FAIL('tag_ub value', NFAIL)
      CALL MPI_ATTR_GET(MPI_COMM_WORLD, MPI_TAG_UB, IVAL, FLAG, IERR)
      IF (IERR .NE. 0 .OR. .NOT. FLAG .OR. IVAL .NE. AVAL)
     &   CALL FAIL('attr_get tag_ub', NFAIL)
      CALL MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_HOST, AVAL, FLAG,
     &   IERR)
      IF (.NOT. FLAG .OR. AVAL .NE. MPI_PROC_NULL)
     &   CALL FAIL('get_attr host', NFAIL)
      CALL MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, AVAL,
     &   FLAG, IERR)
      IF (.NOT. FLAG .OR. AVAL .LT. 0 .OR. AVAL .GT. 1)
     &   CALL FAIL('get_attr wtime_is_global', NFAIL)
      CALL MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, AVAL,
     &   FLAG, IERR)
      IF (FLAG .AND. AVAL .LT. NP) CALL FAIL('universe_size', NFAIL)
      CALL MPI_COMM_GET_ATTR(MPI_COMM_WORLD, MPI_APPNUM, AVAL,
     &   FLAG, IERR)
      IF (FLAG .AND. AVAL .NE. 0) CALL FAIL('appnum', NFAIL)

!     Error classes and strings
      CALL MPI_ERROR_CLASS(MPI_ERR_TRUNCATE, CLS, IERR)
      IF (IERR .NE. 0 .OR. CLS .NE. MPI_ERR_TRUNCATE)
     &   CALL FAIL('error_class', NFAIL)
      CALL MPI_ERROR_STRING(MPI_ERR_TRUNCATE, ESTR, LEN, IERR)
      IF (IERR .NE. 0 .OR. LEN .LE. 0 .OR. LEN .GT.
     &   MPI_MAX_ERROR_STRING .OR. ESTR(LEN+1:) .NE. ' ')
     &   CALL FAIL('error_string truncate', NFAIL)
      CALL MPI_ERROR_STRING(MPI_SUCCESS, ESTR2, LEN, IERR)
      IF (IERR .NE. 0 .OR. LEN .LE. 0 .OR. ESTR .EQ. ESTR2)
     &   CALL FAIL('error_string success', NFAIL)

!     Error handlers: MPI_ERRORS_RETURN, then a Fortran handler
      CALL MPI_COMM_GET_ERRHANDLER(MPI_COMM_WORLD, EH, IERR)
      IF (EH .NE. MPI_ERRORS_ARE_FATAL)
     &   CALL FAIL('default errhandler', NFAIL)
      CALL MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN,
     &   IERR)
      IF (IERR .NE. 0) CALL FAIL('comm_set_errhandler', NFAIL)
      CALL MPI_SEND(I, 1, MPI_INTEGER, NP, 0, MPI_COMM_WORLD, IERR)
      CALL MPI_ERROR_CLASS(IERR, CLS, K)
      IF (IERR .EQ. MPI_SUCCESS .OR. CLS .NE. MPI_ERR_RANK)
     &   CALL FAIL('send to rank np returns MPI_ERR_RANK', NFAIL)
      CALL MPI_ERROR_STRING(IERR, ESTR, LEN, K)
      IF (K .NE. 0 .OR. LEN .LE. 0) CALL FAIL('error_string of a code',
     &   NFAIL)
      CALL MPI_COMM_CREATE_ERRHANDLER(MYHANDLER, EH2, IERR)
      IF (IERR .NE. 0) CALL FAIL('comm_create_errhandler', NFAIL)
      CALL MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, EH2, IERR)
      CALL MPI_COMM_CALL_ERRHANDLER(MPI_COMM_WORLD, MPI_ERR_OTHER, IERR)
      IF (NCALLS .NE. 1 .OR. LASTCODE .NE. MPI_ERR_OTHER .OR.
     &   LASTCOMM .NE. MPI_COMM_WORLD)
     &   CALL FAIL('fortran errhandler called', NFAIL)
      CALL MPI_SEND(I, 1, MPI_INTEGER, -5, 0, MPI_COMM_WORLD, IERR)
      CALL MPI_ERROR_CLASS(LASTCODE, CLS, K)
      IF (NCALLS .NE. 2 .OR. CLS .NE. MPI_ERR_RANK)
     &   CALL FAIL('fortran errhandler on an error', NFAIL)
      CALL MPI_ERRHANDLER_GET(MPI_COMM_WORLD, EH, IERR)
      IF (EH .NE. EH2) CALL FAIL('errhandler_get', NFAIL)
      CALL MPI_ERRHANDLER_SET(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL,
     &   IERR)
      CALL MPI_ERRHANDLER_FREE(EH, IERR)
      CALL MPI_ERRHANDLER_FREE(EH2, IERR)
      IF (IERR .NE. 0 .OR. EH2 .NE. MPI_ERRHANDLER_NULL)
     &   CALL FAIL('errhandler_free', NFAIL)

      CALL MPI_ALLREDUCE(NFAIL, K, 1, MPI_INTEGER, MPI_SUM,
     &   MPI_COMM_WORLD, IERR)
      IF (K .NE. 0) CALL MPI_ABORT(MPI_COMM_WORLD, 1, IERR)
      CALL MPI_FINALIZE(IERR)
      IF (RANK .EQ. 0) PRINT *, 'env_f77: OK on', NP, 'ranks'
      END

      SUBROUTINE MYHANDLER(COMM, CODE)
      INTEGER COMM, CODE
      INTEGER NCALLS, LASTCODE, LASTCOMM
      COMMON /EHSEEN/ NCALLS, LASTCODE, LASTCOMM
      NCALLS = NCALLS + 1
      LASTCODE = CODE
      LASTCOMM = COMM
      END

      SUBROUTINE FAIL(MSG, NFAIL)
      CHARACTER*(*) MSG
      INTEGER NFAIL
      PRINT *, 'FAIL: ', MSG
      NFAIL = NFAIL + 1
      END
