import type { Part } from "./content.js";

/** Parts that resume an interrupted turn. Mirrors `agentd.v1.ToolResume`. */
export interface ToolResume {
  /** toolResponse parts answering pending tool requests. */
  respond?: Part[];
  /** toolRequest parts to run again. */
  restart?: Part[];
}
