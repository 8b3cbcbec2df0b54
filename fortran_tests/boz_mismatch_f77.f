! Fixed-form code of the MPICH era that gfortran 10 and newer reject
! unless given the flags MPICH's mpif77 passes them
! (-fallow-argument-mismatch -fallow-invalid-boz): BOZ constants
! outside DATA statements, and MPI_SEND/MPI_RECV called with REAL,
! INTEGER and DOUBLE PRECISION buffers in one program unit. Ranks pair
! up (0-1, 2-3, ...) and exchange all three; an odd last rank checks
! the constants only. Rank 0 prints one line per check.
      PROGRAM BOZMIS
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER IERR, RANK, NP, I, PEER, NFAIL, MASK, K, L
      INTEGER STATUS(MPI_STATUS_SIZE)
      PARAMETER (K = Z'10')
      REAL RA(4)
      INTEGER IA(4)
      DOUBLE PRECISION DA(2)
      DATA MASK /Z'FF'/
      NFAIL = 0
      L = Z'7F'
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)
      IF (K .NE. 16 .OR. MASK .NE. 255 .OR. L .NE. 127) THEN
         PRINT *, 'rank', RANK, ': BOZ constants', K, MASK, L
         NFAIL = NFAIL + 1
      END IF
      IF (MOD(RANK, 2) .EQ. 0) THEN
         PEER = RANK + 1
      ELSE
         PEER = RANK - 1
      END IF
      IF (PEER .LT. NP) THEN
         IF (MOD(RANK, 2) .EQ. 0) THEN
            DO I = 1, 4
               RA(I) = REAL(I) + 0.5
               IA(I) = IAND(MASK, I * 100 + RANK)
            END DO
            DA(1) = 0.25D0
            DA(2) = DBLE(K)
            CALL MPI_SEND(RA, 4, MPI_REAL, PEER, 1, MPI_COMM_WORLD,
     &         IERR)
            CALL MPI_SEND(IA, 4, MPI_INTEGER, PEER, 2, MPI_COMM_WORLD,
     &         IERR)
            CALL MPI_SEND(DA, 2, MPI_DOUBLE_PRECISION, PEER, 3,
     &         MPI_COMM_WORLD, IERR)
         ELSE
            CALL MPI_RECV(RA, 4, MPI_REAL, PEER, 1, MPI_COMM_WORLD,
     &         STATUS, IERR)
            CALL MPI_RECV(IA, 4, MPI_INTEGER, PEER, 2, MPI_COMM_WORLD,
     &         STATUS, IERR)
            CALL MPI_RECV(DA, 2, MPI_DOUBLE_PRECISION, PEER, 3,
     &         MPI_COMM_WORLD, STATUS, IERR)
            DO I = 1, 4
               IF (RA(I) .NE. REAL(I) + 0.5) NFAIL = NFAIL + 1
               IF (IA(I) .NE. IAND(255, I * 100 + PEER))
     &            NFAIL = NFAIL + 1
            END DO
            IF (DA(1) .NE. 0.25D0 .OR. DA(2) .NE. 16.0D0)
     &         NFAIL = NFAIL + 1
            IF (NFAIL .NE. 0) PRINT *, 'rank', RANK, ': got', RA, IA, DA
         END IF
      END IF
      CALL MPI_ALLREDUCE(MPI_IN_PLACE, NFAIL, 1, MPI_INTEGER, MPI_SUM,
     &   MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0) THEN
         PRINT '(A,I0,A,I0,A,I0)', 'BOZ constants: K=', K, ' MASK=',
     &      MASK, ' L=', L
         PRINT '(A,A,I0,A,I0)', 'REAL, INTEGER and DOUBLE PRECISION ',
     &      'buffers through one MPI_SEND: pairs=', NP / 2,
     &      ' failures=', NFAIL
      END IF
      CALL MPI_FINALIZE(IERR)
      IF (NFAIL .NE. 0) STOP 1
      END
