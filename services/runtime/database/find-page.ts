// One page of a list and the total it is a page of, read from one snapshot. MikroORM's
// findAndCount sends its two statements side by side, so a row committed between them shows in
// the count and not in the page (or the other way round); a read-only repeatable-read
// transaction makes both see the same data.
import { type EntityName, type FilterQuery, type FindOptions, IsolationLevel } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";

export interface Page<T> {
  rows: T[];
  total: number;
}

export function findPage<T extends object, P extends string = never>(
  em: EntityManager,
  entity: EntityName<T>,
  where: FilterQuery<T>,
  options: FindOptions<T, P>,
): Promise<Page<T>> {
  return em.transactional(
    async (tx) => {
      const [rows, total] = await tx.findAndCount(entity, where, options);
      return { rows: rows as T[], total };
    },
    { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true },
  );
}
