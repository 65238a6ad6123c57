import type { MongoClientOptions } from "mongodb";

/**
 * Driver defaults the store applies unless the URI (or `clientOptions`) sets
 * them. Server selection waits up to 10 s (the driver's default is 30 s): a
 * call fails UNAVAILABLE instead of hanging while no primary is reachable.
 * Calls that meet an election are retried by the store (failover-retry.ts):
 * up to 2 × this for a new primary, inside the failover window (30 s), so an
 * unplanned election (up to ~12 s) does not reach callers.
 */
export const DEFAULT_CLIENT_OPTIONS: MongoClientOptions = { serverSelectionTimeoutMS: 10_000 };

/**
 * The connection pool's size unless the URI sets `maxPoolSize` (the driver's
 * default is 100): every watcher of an instance shares its two change streams
 * (status, chunks), whose getMores hold one connection each while they wait,
 * so the other operations (commits, reads, heartbeats) are short and 16
 * connections serve hundreds of followers; a burst waits for a connection
 * instead of opening up to 100 (see docs/stores.md, "Sizing").
 */
export const DEFAULT_MAX_POOL_SIZE = 16;

/** The parts of a connection string: everything before the path, the path's database (decoded), the query. */
interface UriParts {
  /** `mongodb://user:pass@host1,host2` (scheme, credentials, hosts). */
  authority: string;
  database: string;
  query: string;
}

function uriParts(uri: string): UriParts {
  const schemeEnd = uri.indexOf("://");
  const afterScheme = schemeEnd >= 0 ? schemeEnd + 3 : 0;
  const queryStart = uri.indexOf("?", afterScheme);
  const beforeQuery = queryStart >= 0 ? uri.slice(0, queryStart) : uri;
  // Credentials must percent-encode "/" and "@", so the path starts at the first "/" after the last "@".
  const at = beforeQuery.lastIndexOf("@");
  const slash = beforeQuery.indexOf("/", Math.max(afterScheme, at + 1));
  return {
    authority: slash >= 0 ? beforeQuery.slice(0, slash) : beforeQuery,
    database: slash >= 0 ? decodeURIComponent(beforeQuery.slice(slash + 1)) : "",
    query: queryStart >= 0 ? uri.slice(queryStart + 1) : "",
  };
}

/** Lower-cased names of the options in a connection string's query. */
function uriOptionNames(uri: string): Set<string> {
  return new Set([...new URLSearchParams(uriParts(uri).query).keys()].map((k) => k.toLowerCase()));
}

/**
 * Driver options for a store-created client: the store's defaults, except
 * those the URI sets (the driver lets object options override the URI, so a
 * default passed alongside would silently win), then `clientOptions`.
 */
export function clientOptionsFor(uri: string, clientOptions?: MongoClientOptions): MongoClientOptions {
  const inUri = uriOptionNames(uri);
  const defaults = Object.fromEntries(
    Object.entries(DEFAULT_CLIENT_OPTIONS).filter(([key]) => !inUri.has(key.toLowerCase())),
  );
  const pool = inUri.has("maxpoolsize") ? {} : { maxPoolSize: DEFAULT_MAX_POOL_SIZE };
  return { ...defaults, ...pool, ...clientOptions };
}

/** The database named by the connection string's path (`mongodb://host/<database>`), or undefined. */
export function uriDatabase(uri: string): string | undefined {
  return uriParts(uri).database || undefined;
}

/**
 * The connection string the driver gets: the same, without its path. In a
 * MongoDB URI the path is also the default authentication database; agentd
 * uses it only as the database to store sessions in, so credentials are
 * checked against the driver's default for the mechanism (`admin` for SCRAM,
 * `$external` for X.509, AWS, OIDC) unless the URI sets `authSource`.
 */
export function driverUri(uri: string): string {
  const { authority, query } = uriParts(uri);
  return `${authority}/${query ? `?${query}` : ""}`;
}
