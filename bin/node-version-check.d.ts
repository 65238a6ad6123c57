/** The oldest Node.js agentd runs on, as [major, minor]. */
export declare const MINIMUM_NODE: readonly [number, number];
/** Undefined when `version` is new enough, else the one line to print. */
export declare function nodeVersionProblem(version: string): string | undefined;
