import type { PeerCertificate } from "node:tls";
import type { Principal } from "../../types/principal.js";
import type { Authenticate } from "./authenticator.js";

/** A certificate subject field as one string (Node gives repeated fields as arrays). */
function field(value: string | string[] | undefined): string | undefined {
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === "" ? undefined : first;
}

/**
 * Mutual TLS: the principal of a verified client certificate (the TLS layer
 * has already checked it against `--tls-client-ca`). Subject = the
 * certificate subject's CN; tenant = its O (organization), or the CN when it
 * has none. Claims carry the certificate's subject, issuer CN, serial number
 * and SHA-256 fingerprint. Null without a certificate or a CN.
 */
export const clientCertificateAuthenticator: Authenticate = (request) => {
  const cert: PeerCertificate | undefined = request.peerCertificate;
  const subject = field(cert?.subject?.CN);
  if (!cert || subject === undefined) return null;
  const principal: Principal = {
    subject,
    tenant: field(cert.subject.O) ?? subject,
    claims: Object.freeze({
      certificate: Object.freeze({
        subject: { ...cert.subject },
        issuer: field(cert.issuer?.CN),
        serialNumber: cert.serialNumber,
        fingerprint256: cert.fingerprint256,
      }),
    }),
  };
  return Object.freeze(principal);
};
