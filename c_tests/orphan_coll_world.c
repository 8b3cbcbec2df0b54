/* orphan_coll.c with only the unmatched MPI_Barrier on MPI_COMM_WORLD: the others'
 * MPI_Finalize used to take a step of MPI_COMM_WORLD's channel, which completed the lone
 * rank's barrier with a wrong MPI_ERR_NOT_SAME and left its MPI_Finalize waiting forever. */
#define ORPHAN_WORLD_ONLY 1
#include "orphan_coll.c"
