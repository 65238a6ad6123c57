/**
 * The npm name agentd is published under (package.json's `name`): what a
 * project depends on and imports (`@agentd-dev/agentd`, `…/client`). The
 * command it installs is `agentd` whatever this name is.
 */
export const AGENTD_PACKAGE = "@agentd-dev/agentd";
