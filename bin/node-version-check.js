// The one Node.js statement agentd makes, checked before anything else loads:
// agentd runs on Node.js 22.15 or newer (the `engines` field of package.json
// says the same). Below 22 its dependencies do not support the runtime
// (@connectrpc/connect-node 2.2 and the AI SDK 7 declare node >= 22; Node 20
// is past its end of life), and below 22.15 Node has no `module.registerHooks`,
// which makes an agents module's `import "@agentd-dev/agentd"` load this same copy.

/** The oldest Node.js agentd runs on, as [major, minor]. */
export const MINIMUM_NODE = [22, 15];

/**
 * Undefined when `version` (e.g. process.versions.node) is new enough, else
 * the one line to print: what is needed, what was found, and what to do.
 */
export function nodeVersionProblem(version) {
  const [major, minor] = version.split(".").map(Number);
  if (major > MINIMUM_NODE[0] || (major === MINIMUM_NODE[0] && minor >= MINIMUM_NODE[1])) return undefined;
  return `agentd needs Node.js ${MINIMUM_NODE.join(".")} or newer and this is ${version}: install Node.js 22 (22.15+) or 24`;
}
