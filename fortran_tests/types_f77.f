! Fixed-form program with include 'mpif.h': derived datatypes in their MPI-1
! Fortran forms. TYPE_STRUCT from ADDRESS differences (INTEGER displacements)
! sent around the ring, TYPE_HINDEXED with INTEGER displacements, TYPE_EXTENT,
! TYPE_LB, TYPE_UB, a TYPE_VECTOR column block reduced with a user op, and the
! address-kind functions MPI_AINT_ADD / MPI_AINT_DIFF declared by the program
! (mpif.h does not type them, as in MPICH).
      PROGRAM TYPEF77
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER(KIND=MPI_ADDRESS_KIND) MPI_AINT_ADD, MPI_AINT_DIFF
      EXTERNAL MPI_AINT_ADD, MPI_AINT_DIFF, ADDF
      INTEGER IERR, RANK, NP, K, NFAIL, NXT, PRV, I, J
      INTEGER STAT(MPI_STATUS_SIZE)
      INTEGER IA, IB, IC, DISPS(3), BLENS(3), TYPES(3), ST, HI
      INTEGER VT, OP, EXT, LB, UB
      INTEGER IV(3), IR(3)
      DOUBLE PRECISION DV(2), DR(2)
!     reached through addresses only (as with MPI_BOTTOM): VOLATILE
      VOLATILE IV, IR, DV, DR
      INTEGER M(6, 4), R(6, 4)
      INTEGER(KIND=MPI_ADDRESS_KIND) A1, A2
      NFAIL = 0
      CALL MPI_INIT(IERR)
      CALL MPI_COMM_RANK(MPI_COMM_WORLD, RANK, IERR)
      CALL MPI_COMM_SIZE(MPI_COMM_WORLD, NP, IERR)
      NXT = MOD(RANK + 1, NP)
      PRV = MOD(RANK + NP - 1, NP)

!     ---- TYPE_STRUCT over IV(2:3) and DV, displacements from ADDRESS
      CALL MPI_ADDRESS(IV(1), IA, IERR)
      CALL MPI_ADDRESS(IV(2), IB, IERR)
      CALL MPI_ADDRESS(DV, IC, IERR)
      IF (IB - IA .NE. 4) CALL FAIL('address difference', NFAIL)
      BLENS(1) = 2
      BLENS(2) = 2
      DISPS(1) = IB - IA
      DISPS(2) = IC - IA
      TYPES(1) = MPI_INTEGER
      TYPES(2) = MPI_DOUBLE_PRECISION
      CALL MPI_TYPE_STRUCT(2, BLENS, DISPS, TYPES, ST, IERR)
      CALL MPI_TYPE_COMMIT(ST, IERR)
      IF (IERR .NE. MPI_SUCCESS) CALL FAIL('type_struct', NFAIL)
      CALL MPI_TYPE_LB(ST, LB, IERR)
      IF (LB .NE. 4) CALL FAIL('type_lb of the struct', NFAIL)
      CALL MPI_ADDRESS(IR(1), IA, IERR)
      CALL MPI_ADDRESS(DR, IC, IERR)
      IV(1) = RANK
      IV(2) = RANK * 3
      IV(3) = -RANK
      DV(1) = RANK + 0.25D0
      DV(2) = RANK - 0.5D0
      IR(1) = -1
      IR(2) = -1
      IR(3) = -1
      DR(1) = -1
      DR(2) = -1
!     the receive side: the same layout relative to IR(1) and DR
      IF (IC - IA .EQ. DISPS(2)) THEN
        CALL MPI_SENDRECV(IV, 1, ST, NXT, 5, IR, 1, ST, PRV, 5,
     &     MPI_COMM_WORLD, STAT, IERR)
        IF (IR(1) .NE. -1 .OR. IR(2) .NE. PRV * 3 .OR.
     &     IR(3) .NE. -PRV) CALL FAIL('struct integers', NFAIL)
        IF (DR(1) .NE. PRV + 0.25D0 .OR. DR(2) .NE. PRV - 0.5D0)
     &     CALL FAIL('struct doubles', NFAIL)
      END IF
      CALL MPI_TYPE_FREE(ST, IERR)

!     ---- TYPE_HINDEXED with INTEGER byte displacements: M(2,:) and M(5,:)
      DO J = 1, 4
        DO I = 1, 6
          M(I, J) = RANK * 1000 + I * 10 + J
        END DO
      END DO
      BLENS(1) = 1
      BLENS(2) = 1
      DISPS(1) = 4
      DISPS(2) = 16
      CALL MPI_TYPE_HINDEXED(2, BLENS, DISPS, MPI_INTEGER, HI, IERR)
      CALL MPI_TYPE_EXTENT(HI, EXT, IERR)
      CALL MPI_TYPE_UB(HI, UB, IERR)
      IF (EXT .NE. 16 .OR. UB .NE. 20)
     &   CALL FAIL('hindexed extent/ub', NFAIL)
!     one column of 6 INTEGERs is 24 bytes: a vector of 4 columns
      CALL MPI_TYPE_HVECTOR(4, 1, 24, HI, VT, IERR)
      CALL MPI_TYPE_COMMIT(VT, IERR)
      CALL MPI_TYPE_EXTENT(VT, EXT, IERR)
      IF (EXT .NE. 3 * 24 + 16) CALL FAIL('hvector extent', NFAIL)
      DO J = 1, 4
        DO I = 1, 6
          R(I, J) = -1
        END DO
      END DO
      CALL MPI_OP_CREATE(ADDF, .TRUE., OP, IERR)
      CALL MPI_ALLREDUCE(M, R, 1, VT, OP, MPI_COMM_WORLD, IERR)
      IF (IERR .NE. MPI_SUCCESS) CALL FAIL('allreduce user op', NFAIL)
      DO J = 1, 4
        DO I = 1, 6
          K = -1
          IF (I .EQ. 2 .OR. I .EQ. 5)
     &       K = 1000 * (NP * (NP - 1) / 2) + NP * (I * 10 + J)
          IF (R(I, J) .NE. K) CALL FAIL('user op over rows 2, 5',
     &       NFAIL)
        END DO
      END DO
      CALL MPI_OP_FREE(OP, IERR)
      CALL MPI_TYPE_FREE(VT, IERR)
      CALL MPI_TYPE_FREE(HI, IERR)

!     ---- address-kind functions
      CALL MPI_GET_ADDRESS(M(1, 1), A1, IERR)
      CALL MPI_GET_ADDRESS(M(1, 2), A2, IERR)
      IF (MPI_AINT_DIFF(A2, A1) .NE. 24)
     &   CALL FAIL('aint_diff', NFAIL)
      IF (MPI_AINT_ADD(A1, 24_MPI_ADDRESS_KIND) .NE. A2)
     &   CALL FAIL('aint_add', NFAIL)

      CALL MPI_ALLREDUCE(NFAIL, K, 1, MPI_INTEGER, MPI_SUM,
     &   MPI_COMM_WORLD, IERR)
      IF (K .NE. 0) CALL MPI_ABORT(MPI_COMM_WORLD, 1, IERR)
      CALL MPI_FINALIZE(IERR)
      IF (RANK .EQ. 0) PRINT *, 'types_f77: OK on', NP, 'ranks'
      END

!     The user op gets the buffers laid out as the derived type describes
!     them (LEN instances of VT, 22 INTEGERs of extent each): it adds the
!     INTEGERs the type selects, rows 2 and 5 of a 6 x 4 block.
      SUBROUTINE ADDF(IN, INOUT, LEN, DTYPE)
      IMPLICIT NONE
      INCLUDE 'mpif.h'
      INTEGER LEN, DTYPE, IN(*), INOUT(*), I, J, L, K
      DO L = 1, LEN
        DO J = 1, 4
          DO I = 2, 5, 3
            K = (I - 1) + (J - 1) * 6 + (L - 1) * 22 + 1
            INOUT(K) = INOUT(K) + IN(K)
          END DO
        END DO
      END DO
      IF (DTYPE .EQ. MPI_DATATYPE_NULL) INOUT(2) = -99
      END

      SUBROUTINE FAIL(MSG, NFAIL)
      CHARACTER*(*) MSG
      INTEGER NFAIL
      PRINT *, 'FAIL: ', MSG
      NFAIL = NFAIL + 1
      END
