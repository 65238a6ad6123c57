import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** PEM files of a throw-away PKI, made with the `openssl` command for one test file. */
export interface TestCertificates {
  dir: string;
  /** The CA that signed the server and the trusted client certificate. */
  caFile: string;
  ca: string;
  /** Server certificate for localhost and 127.0.0.1, and its key. */
  serverCertFile: string;
  serverKeyFile: string;
  /** Client certificate CN=`clientSubject`, O=`clientTenant`, signed by the CA. */
  clientCertFile: string;
  clientKeyFile: string;
  clientCert: string;
  clientKey: string;
  clientSubject: string;
  clientTenant: string;
  /** A client certificate from another CA (must be refused). */
  strangerCert: string;
  strangerKey: string;
}

function openssl(dir: string, args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
}

/** A CA-signed leaf certificate `name`.pem / `name`.key with `subject` and optional extensions file. */
function leaf(dir: string, name: string, subject: string, ca: string, extensions?: string): void {
  openssl(dir, [
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    subject,
  ]);
  openssl(dir, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    `${ca}.pem`,
    "-CAkey",
    `${ca}.key`,
    "-CAcreateserial",
    "-days",
    "2",
    "-out",
    `${name}.pem`,
    ...(extensions ? ["-extfile", extensions] : []),
  ]);
}

function authority(dir: string, name: string, subject: string): void {
  openssl(dir, [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.pem`,
    "-days",
    "2",
    "-subj",
    subject,
  ]);
}

/** Makes a CA, a server certificate (localhost, 127.0.0.1), a trusted client certificate and an untrusted one. */
export function makeTestCertificates(clientSubject = "billing-service", clientTenant = "acme"): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), "agentd-certs-"));
  authority(dir, "ca", "/CN=agentd test CA");
  authority(dir, "other-ca", "/CN=someone else's CA");
  writeFileSync(join(dir, "server.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n");
  writeFileSync(join(dir, "client.ext"), "extendedKeyUsage=clientAuth\n");
  leaf(dir, "server", "/CN=localhost", "ca", "server.ext");
  leaf(dir, "client", `/O=${clientTenant}/CN=${clientSubject}`, "ca", "client.ext");
  leaf(dir, "stranger", `/O=${clientTenant}/CN=${clientSubject}`, "other-ca", "client.ext");
  const read = (file: string): string => readFileSync(join(dir, file), "utf8");
  return {
    dir,
    caFile: join(dir, "ca.pem"),
    ca: read("ca.pem"),
    serverCertFile: join(dir, "server.pem"),
    serverKeyFile: join(dir, "server.key"),
    clientCertFile: join(dir, "client.pem"),
    clientKeyFile: join(dir, "client.key"),
    clientCert: read("client.pem"),
    clientKey: read("client.key"),
    clientSubject,
    clientTenant,
    strangerCert: read("stranger.pem"),
    strangerKey: read("stranger.key"),
  };
}
