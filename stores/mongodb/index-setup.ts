import type { Collection, Document, IndexDirection } from "mongodb";
import { AgentError } from "../../src/errors/agent-error.js";
import { errorCode } from "./mongo-errors.js";

/** An index the store needs: its key pattern (field order matters) and the name it creates it under. */
export interface IndexSpec {
  name: string;
  key: Record<string, IndexDirection>;
  /**
   * A TTL index: MongoDB deletes a document once its (Date) key field is this
   * many seconds in the past. An existing index on the same key without this
   * setting (or with another value) still serves queries; the store then
   * reports a warning instead of changing an index it did not create.
   */
  expireAfterSeconds?: number;
  /**
   * What a TTL index expires, for the warning about an equivalent index with
   * another setting: the documents MongoDB removes and what the sweep
   * deletes instead. Default `{ documents: "heads", sweep: "sessions" }`.
   */
  expires?: { documents: string; sweep: string };
  /**
   * A unique index: created with `unique: true`, and an existing index on the
   * same keys serves only when it is unique too (without uniqueness a
   * repeated key would go unnoticed: FAILED_PRECONDITION).
   */
  unique?: boolean;
  /**
   * A sparse index: created with `sparse: true`, so it holds only the
   * documents that have the key field (a query must filter on `$exists: true`
   * to use it). An existing index on the same keys serves whether it is
   * sparse or not.
   */
  sparse?: boolean;
}

/** IndexOptionsConflict: an index with the same key pattern exists under another name (or other options). */
const INDEX_OPTIONS_CONFLICT = 85;
/** IndexKeySpecsConflict: the name is taken by an index with another key pattern. */
const INDEX_KEY_SPECS_CONFLICT = 86;
/** NamespaceNotFound: listIndexes of a collection that does not exist yet. */
const NAMESPACE_NOT_FOUND = 26;

/** True when two key patterns name the same fields, in the same order, with the same directions. */
export function sameKeyPattern(a: Document | undefined, b: Document | undefined): boolean {
  if (!a || !b) return false;
  const left = Object.entries(a);
  const right = Object.entries(b);
  return (
    left.length === right.length &&
    left.every(([field, dir], i) => field === right[i]![0] && String(dir) === String(right[i]![1]))
  );
}

/** Options that change what an index holds or allows: an index with any of them cannot stand in for a plain one. */
const RESTRICTING_OPTIONS = ["unique", "sparse", "partialFilterExpression"] as const;

/**
 * Makes sure `collection` has an index for every spec. An existing index with
 * the same key pattern serves, whatever its name (an operator may have created
 * it, or renamed ours); only a missing one is created, under the spec's name
 * (with the spec's `expireAfterSeconds` for a TTL index). An equivalent index
 * whose `expireAfterSeconds` differs from the spec's is used as it is and
 * reported to `warn` (MongoDB then expires documents by its setting, or not at
 * all). A concurrent creation by another instance is fine. FAILED_PRECONDITION when
 * the existing index with that key pattern is unique (unless the spec is),
 * sparse (unless the spec is) or partial (it would refuse writes or miss records), when a spec's
 * unique index exists without uniqueness, or when the spec's name is taken by
 * an index with other keys.
 */
export async function ensureIndexes<T extends Document>(
  collection: Collection<T>,
  specs: readonly IndexSpec[],
  warn: (message: string) => void = () => undefined,
): Promise<void> {
  const existing = await listIndexes(collection);
  for (const spec of specs) {
    const equivalent = existing.find((index) => sameKeyPattern(index.key as Document, spec.key));
    if (equivalent) {
      const restricting = RESTRICTING_OPTIONS.filter(
        (option) =>
          !(option === "unique" && spec.unique) &&
          !(option === "sparse" && spec.sparse) &&
          equivalent[option] !== undefined &&
          equivalent[option] !== false,
      );
      if (restricting.length > 0)
        throw unusableIndex(collection, spec, String(equivalent.name), restricting.join(", "));
      if (spec.unique && equivalent.unique !== true) throw notUnique(collection, spec, String(equivalent.name));
      if (spec.expireAfterSeconds !== undefined && Number(equivalent.expireAfterSeconds) !== spec.expireAfterSeconds) {
        warn(ttlMismatch(collection, spec, String(equivalent.name), equivalent.expireAfterSeconds));
      }
      continue;
    }
    try {
      await collection.createIndex(spec.key, {
        name: spec.name,
        ...(spec.unique ? { unique: true } : {}),
        ...(spec.sparse ? { sparse: true } : {}),
        ...(spec.expireAfterSeconds === undefined ? {} : { expireAfterSeconds: spec.expireAfterSeconds }),
      });
    } catch (err) {
      if (errorCode(err) === INDEX_OPTIONS_CONFLICT) continue; // created meanwhile (another instance, another name)
      if (errorCode(err) === INDEX_KEY_SPECS_CONFLICT) throw nameTaken(collection, spec, err);
      throw err;
    }
  }
}

async function listIndexes<T extends Document>(collection: Collection<T>): Promise<Document[]> {
  try {
    return await collection.listIndexes().toArray();
  } catch (err) {
    if (errorCode(err) === NAMESPACE_NOT_FOUND) return [];
    throw err;
  }
}

function describe(spec: IndexSpec): string {
  return JSON.stringify(spec.key);
}

function unusableIndex<T extends Document>(
  collection: Collection<T>,
  spec: IndexSpec,
  name: string,
  options: string,
): AgentError {
  return new AgentError(
    "FAILED_PRECONDITION",
    `MongoDB collection "${collection.collectionName}" has an index "${name}" on ${describe(spec)} with ${options}; agentd needs a plain ` +
      `index on these keys. Drop that index (agentd then creates "${spec.name}") or point agentd at another collectionPrefix.`,
    { details: { collection: collection.collectionName, index: name } },
  );
}

function notUnique<T extends Document>(collection: Collection<T>, spec: IndexSpec, name: string): AgentError {
  return new AgentError(
    "FAILED_PRECONDITION",
    `MongoDB collection "${collection.collectionName}" has an index "${name}" on ${describe(spec)} that is not unique; agentd needs a ` +
      `unique index on these keys. Drop that index (agentd then creates "${spec.name}") or point agentd at another collectionPrefix.`,
    { details: { collection: collection.collectionName, index: name } },
  );
}

function ttlMismatch<T extends Document>(
  collection: Collection<T>,
  spec: IndexSpec,
  name: string,
  found: unknown,
): string {
  const setting =
    found === undefined ? "no expireAfterSeconds (not a TTL index)" : `expireAfterSeconds ${String(found)}`;
  const { documents, sweep } = spec.expires ?? { documents: "heads", sweep: "sessions" };
  return (
    `MongoDB collection "${collection.collectionName}" has an index "${name}" on ${describe(spec)} with ${setting}; agentd would ` +
    `create it with expireAfterSeconds ${spec.expireAfterSeconds}. agentd uses it as it is: the sweep still deletes expired ` +
    `${sweep}, but MongoDB ${found === undefined ? "does not remove" : "removes"} expired ${documents} ${found === undefined ? "by itself" : "on its own schedule"}. ` +
    `To change it: db.runCommand({collMod: "${collection.collectionName}", index: {name: "${name}", expireAfterSeconds: ${spec.expireAfterSeconds}}}).`
  );
}

function nameTaken<T extends Document>(collection: Collection<T>, spec: IndexSpec, cause: unknown): AgentError {
  return new AgentError(
    "FAILED_PRECONDITION",
    `MongoDB collection "${collection.collectionName}" has an index named "${spec.name}" on other keys than ${describe(spec)}; ` +
      `drop or rename it so agentd can create its index.`,
    { details: { collection: collection.collectionName, index: spec.name }, cause },
  );
}
