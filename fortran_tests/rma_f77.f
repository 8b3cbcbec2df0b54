! Fixed-form program with include 'mpif.h': MPI_WIN_CREATE on an
! array in a COMMON block (so that the compiler cannot keep it in
! registers across MPI calls), MPI_WIN_FENCE, MPI_PUT to the right
! neighbour, MPI_GET from the left one, MPI_ACCUMULATE (MPI_SUM) of
! everybody into rank 0, MPI_WIN_FREE; checked against values
! computed here.
      PROGRAM RMAF77
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER W(8)
      COMMON /WINBUF/ W
      INTEGER IERR, RANK, NP, LEFT, RIGHT, WIN, I, NFAIL, NALL
      INTEGER SRC(2), G(2), ONE(2)
      INTEGER(KIND=MPI_ADDRESS_KIND) WSIZE, DISP
      NFAIL = 0
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)
      LEFT = MOD(RANK + NP - 1, NP)
      RIGHT = MOD(RANK + 1, NP)
      DO I = 1, 8
         W(I) = RANK * 100 + I
      END DO
      WSIZE = 32
      CALL MPI_WIN_CREATE(W, WSIZE, 4, MPI_INFO_NULL, MPI_COMM_WORLD,
     &   WIN, IERR)
      IF (IERR .NE. MPI_SUCCESS) CALL FAILI('win_create ierr', 0,
     &   IERR, MPI_SUCCESS, RANK, NFAIL)
      CALL MPI_WIN_FENCE(MPI_MODE_NOPRECEDE, WIN, IERR)
!     W(1:2) of the right neighbour, W(5:6) of the left one, W(8) of 0
      SRC(1) = RANK * 1000 + 1
      SRC(2) = RANK * 1000 + 2
      DISP = 0
      CALL MPI_PUT(SRC, 2, MPI_INTEGER, RIGHT, DISP, 2, MPI_INTEGER,
     &   WIN, IERR)
      IF (IERR .NE. MPI_SUCCESS) CALL FAILI('put ierr', 0,
     &   IERR, MPI_SUCCESS, RANK, NFAIL)
      G(1) = -1
      G(2) = -1
      DISP = 4
      CALL MPI_GET(G, 2, MPI_INTEGER, LEFT, DISP, 2, MPI_INTEGER,
     &   WIN, IERR)
      IF (IERR .NE. MPI_SUCCESS) CALL FAILI('get ierr', 0,
     &   IERR, MPI_SUCCESS, RANK, NFAIL)
      ONE(1) = RANK + 1
      ONE(2) = 2 * (RANK + 1)
      DISP = 6
      CALL MPI_ACCUMULATE(ONE, 2, MPI_INTEGER, 0, DISP, 2,
     &   MPI_INTEGER, MPI_SUM, WIN, IERR)
      IF (IERR .NE. MPI_SUCCESS) CALL FAILI('accumulate ierr', 0,
     &   IERR, MPI_SUCCESS, RANK, NFAIL)
      CALL MPI_WIN_FENCE(MPI_MODE_NOSUCCEED, WIN, IERR)
      IF (IERR .NE. MPI_SUCCESS) CALL FAILI('fence ierr', 0,
     &   IERR, MPI_SUCCESS, RANK, NFAIL)
      DO I = 1, 2
         CALL FAILI('put from the left', I, W(I), LEFT * 1000 + I,
     &      RANK, NFAIL)
         CALL FAILI('get from the left', I, G(I), LEFT * 100 + 4 + I,
     &      RANK, NFAIL)
      END DO
      DO I = 3, 6
         CALL FAILI('untouched', I, W(I), RANK * 100 + I, RANK, NFAIL)
      END DO
      IF (RANK .EQ. 0) THEN
         CALL FAILI('accumulate', 7, W(7), 7 + NP * (NP + 1) / 2,
     &      RANK, NFAIL)
         CALL FAILI('accumulate', 8, W(8), 8 + NP * (NP + 1),
     &      RANK, NFAIL)
      ELSE
         CALL FAILI('untouched', 7, W(7), RANK * 100 + 7, RANK, NFAIL)
         CALL FAILI('untouched', 8, W(8), RANK * 100 + 8, RANK, NFAIL)
      END IF
      CALL MPI_WIN_FREE(WIN, IERR)
      IF (IERR .NE. MPI_SUCCESS) CALL FAILI('win_free ierr', 0,
     &   IERR, MPI_SUCCESS, RANK, NFAIL)
      CALL FAILI('win_free handle', 0, WIN, MPI_WIN_NULL, RANK, NFAIL)
      CALL MPI_ALLREDUCE(NFAIL, NALL, 1, MPI_INTEGER, MPI_SUM,
     &   MPI_COMM_WORLD, IERR)
      IF (RANK .EQ. 0) THEN
         IF (NALL .EQ. 0) THEN
            PRINT *, 'No Errors'
         ELSE
            PRINT *, 'FAILED:', NALL, 'errors'
         END IF
      END IF
      CALL MPI_FINALIZE(IERR)
      IF (NALL .NE. 0) STOP 1
      END

!     Counts and reports GOT /= WANT.
      SUBROUTINE FAILI(WHAT, IDX, GOT, WANT, RANK, NFAIL)
      IMPLICIT NONE
      CHARACTER*(*) WHAT
      INTEGER IDX, GOT, WANT, RANK, NFAIL
      IF (GOT .NE. WANT) THEN
         NFAIL = NFAIL + 1
         PRINT *, 'rank', RANK, ': ', WHAT, ' index', IDX, ': got',
     &      GOT, ' expected', WANT
      END IF
      END
