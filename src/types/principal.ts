/**
 * Who a call acts for, as established by the server's authentication: the
 * tenant owns the sessions the call creates and is the only one that reaches
 * them (another tenant's session answers NOT_FOUND).
 */
export interface Principal {
  /** The authenticated caller (a user, a service account, a certificate's CN). */
  readonly subject: string;
  /** The owner of the caller's sessions; every call of one tenant shares its sessions. */
  readonly tenant: string;
  /** What the credential said besides (JWT claims, certificate fields); never the credential itself. */
  readonly claims: Readonly<Record<string, unknown>>;
}

/** The principal of calls on a server without authentication: tenant "" owns every session. */
export const ANONYMOUS: Principal = Object.freeze({ subject: "anonymous", tenant: "", claims: Object.freeze({}) });
