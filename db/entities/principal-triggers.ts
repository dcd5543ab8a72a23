/**
 * Triggers that tell every API replica a key's principal changed: NOTIFY `tessera_principals` with the user id
 * (api/principal-cache.ts listens). One pair per table: on update when one of `columns` changed, and on delete.
 */
export function principalTriggers(table: string, userIdColumn: string, columns: string[]) {
  const notify = `perform pg_notify('tessera_principals', old.${userIdColumn});`;
  const changed = columns.map((column) => `old.${column} is distinct from new.${column}`).join(' or ');
  return [
    {
      name: `${table}_principal_updated`,
      timing: 'after' as const,
      events: ['update' as const],
      // (The condition sits in the body: MikroORM's schema diff misreads a trigger's WHEN clause.)
      body: `if ${changed} then
        ${notify}
      end if;
      return null;`,
    },
    {
      name: `${table}_principal_deleted`,
      timing: 'after' as const,
      events: ['delete' as const],
      body: `${notify} return null;`,
    },
  ];
}
