// Role rankings, declared by each service module: a credential satisfies a policy when its role ranks at least as high as the
// policy's. Lowest first, so a ranking is just an ordered list.

/** A ranking of roles, lowest first. */
export type RoleRanking = readonly string[];

/**
 * Whether `held` satisfies `required` in `ranking`. An empty `required` means any valid
 * credential; a role the ranking does not know never satisfies anything (fail closed).
 */
export function roleSatisfies(ranking: RoleRanking, held: string, required: string): boolean {
  if (required === "") return true;
  const heldRank = ranking.indexOf(held);
  const requiredRank = ranking.indexOf(required);
  return heldRank >= 0 && requiredRank >= 0 && heldRank >= requiredRank;
}
