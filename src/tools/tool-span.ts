import { context, SpanKind, trace } from "@opentelemetry/api";
import { agentdTracer, recordFailure } from "../runtime/telemetry/telemetry.js";
import * as names from "../runtime/telemetry/telemetry-names.js";
import type { ToolRequest } from "../types/content.js";
import { ToolInterrupt } from "./interrupts.js";

/**
 * Runs one tool call in a span `execute_tool <tool>` (GenAI conventions:
 * `gen_ai.operation.name` = execute_tool, `gen_ai.tool.name`,
 * `gen_ai.tool.call.id`), a child of the turn's span. The tool's input and
 * output are not recorded. A throwing tool fails the span; an interrupt does
 * not (it is how a tool asks the client): its span gets
 * `agentd.finish_reason` = interrupted. Outside a recording span (telemetry
 * off, or a trace not sampled) the tool just runs.
 */
export async function toolSpan<T>(request: ToolRequest, run: () => T | Promise<T>): Promise<T> {
  if (!trace.getActiveSpan()?.isRecording()) return run();
  const span = agentdTracer().startSpan(`${names.GEN_AI_OPERATION_EXECUTE_TOOL} ${request.name}`, {
    kind: SpanKind.INTERNAL,
    attributes: {
      [names.ATTR_GEN_AI_OPERATION_NAME]: names.GEN_AI_OPERATION_EXECUTE_TOOL,
      [names.ATTR_GEN_AI_TOOL_NAME]: request.name,
      ...(request.ref ? { [names.ATTR_GEN_AI_TOOL_CALL_ID]: request.ref } : {}),
    },
  });
  try {
    return await context.with(trace.setSpan(context.active(), span), run);
  } catch (err) {
    if (err instanceof ToolInterrupt) span.setAttribute(names.ATTR_FINISH_REASON, "interrupted");
    else recordFailure(span, err);
    throw err;
  } finally {
    span.end();
  }
}
