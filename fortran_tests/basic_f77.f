! Fixed-form program with include 'mpif.h': start-up, rank/size,
! version, ALLREDUCE and REDUCE of INTEGER and DOUBLE PRECISION (also
! in place), WTIME/WTICK, INITIALIZED/FINALIZED; checked against a
! sequential oracle.
      PROGRAM BASIC
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER IERR, RANK, NP, I, IV(4), IR(4), V, SV
      DOUBLE PRECISION DV, DR, T0, T1, TK
      LOGICAL FLAG
      INTEGER NFAIL
      NFAIL = 0
      CALL MPI_INITIALIZED(FLAG, IERR)
      IF (FLAG) CALL FAIL('initialized before MPI_INIT', NFAIL)
      CALL MPI_INIT(IERR)
      IF (IERR .NE. MPI_SUCCESS) STOP 1
      CALL MPI_INITIALIZED(FLAG, IERR)
      IF (.NOT. FLAG) CALL FAIL('not initialized', NFAIL)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)
      IF (IERR .NE. MPI_SUCCESS) CALL FAIL('comm_size', NFAIL)
      IF (RANK .LT. 0 .OR. RANK .GE. NP) CALL FAIL('rank', NFAIL)
      CALL MPI_GET_VERSION(V, SV, IERR)
      IF (V .NE. MPI_VERSION .OR. SV .NE. MPI_SUBVERSION)
     &   CALL FAIL('version', NFAIL)
      IF (V .NE. 3 .OR. SV .NE. 1) CALL FAIL('version 3.1', NFAIL)
!     INTEGER sum and max of 4 elements
      DO I = 1, 4
         IV(I) = RANK * 10 + I
      END DO
      CALL MPI_ALLREDUCE(IV, IR, 4, MPI_INTEGER, MPI_SUM,
     &   MPI_COMM_WORLD, IERR)
      IF (IERR .NE. MPI_SUCCESS) CALL FAIL('allreduce ierr', NFAIL)
      DO I = 1, 4
         IF (IR(I) .NE. 10 * NP * (NP - 1) / 2 + NP * I)
     &      CALL FAIL('allreduce sum', NFAIL)
      END DO
      CALL MPI_ALLREDUCE(MPI_IN_PLACE, IV, 4, MPI_INTEGER, MPI_MAX,
     &   MPI_COMM_WORLD, IERR)
      DO I = 1, 4
         IF (IV(I) .NE. (NP - 1) * 10 + I)
     &      CALL FAIL('allreduce in place max', NFAIL)
      END DO
!     DOUBLE PRECISION reduce to the last rank
      DV = DBLE(RANK) + 0.5D0
      DR = -1.0D0
      CALL MPI_REDUCE(DV, DR, 1, MPI_DOUBLE_PRECISION, MPI_SUM,
     &   NP - 1, MPI_COMM_WORLD, IERR)
      IF (IERR .NE. MPI_SUCCESS) CALL FAIL('reduce ierr', NFAIL)
      IF (RANK .EQ. NP - 1) THEN
         IF (DR .NE. DBLE(NP * (NP - 1)) / 2.0D0 + 0.5D0 * NP)
     &      CALL FAIL('reduce sum', NFAIL)
      ELSE
         IF (DR .NE. -1.0D0) CALL FAIL('reduce touched', NFAIL)
      END IF
      IF (RANK .EQ. 0) THEN
         DR = DV
         CALL MPI_REDUCE(MPI_IN_PLACE, DR, 1, MPI_DOUBLE_PRECISION,
     &      MPI_PROD, 0, MPI_COMM_WORLD, IERR)
      ELSE
         CALL MPI_REDUCE(DV, DR, 1, MPI_DOUBLE_PRECISION,
     &      MPI_PROD, 0, MPI_COMM_WORLD, IERR)
      END IF
      IF (RANK .EQ. 0) THEN
         T0 = 1.0D0
         DO I = 0, NP - 1
            T0 = T0 * (DBLE(I) + 0.5D0)
         END DO
         IF (ABS(DR - T0) .GT. 1.0D-12 * ABS(T0))
     &      CALL FAIL('reduce in place prod', NFAIL)
      END IF
!     Timers
      T0 = MPI_WTIME()
      T1 = MPI_WTIME()
      TK = MPI_WTICK()
      IF (T1 .LT. T0 .OR. TK .LE. 0.0D0 .OR. TK .GT. 1.0D0)
     &   CALL FAIL('wtime', NFAIL)
      CALL MPI_FINALIZED(FLAG, IERR)
      IF (FLAG) CALL FAIL('finalized early', NFAIL)
      IF (NFAIL .NE. 0) CALL MPI_ABORT(MPI_COMM_WORLD, 1, IERR)
      CALL MPI_FINALIZE(IERR)
      IF (IERR .NE. MPI_SUCCESS) STOP 1
      CALL MPI_FINALIZED(FLAG, IERR)
      IF (.NOT. FLAG) STOP 1
      IF (RANK .EQ. 0) PRINT *, 'basic_f77: OK on', NP, 'ranks'
      END

      SUBROUTINE FAIL(MSG, NFAIL)
      CHARACTER*(*) MSG
      INTEGER NFAIL
      PRINT *, 'FAIL: ', MSG
      NFAIL = NFAIL + 1
      END
