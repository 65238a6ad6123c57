import { create, type DescService, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, type ConnectRouter } from "@connectrpc/connect";
import * as v1 from "../../gen/ts/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/ts/grpc/reflection/v1alpha/reflection_pb.js";
import { ReflectionIndex } from "./reflection-index.js";
import { documentedDescriptors } from "./documented-descriptors.js";

/** The two reflection services this module can serve. */
export const REFLECTION_SERVICES: readonly DescService[] = [v1.ServerReflection, v1alpha.ServerReflection];

type ResponseInit = MessageInitShape<typeof v1.ServerReflectionResponseSchema>;
type RequestShape = v1.ServerReflectionRequest | v1alpha.ServerReflectionRequest;

function errorResponse(code: Code, message: string): ResponseInit["messageResponse"] {
  return { case: "errorResponse", value: { errorCode: code, errorMessage: message } };
}

/**
 * Answers one reflection request from `index`. Unknown files, symbols and
 * extensions get an `error_response` with NOT_FOUND; an empty request gets
 * INVALID_ARGUMENT. Files come with their transitive dependencies.
 */
export function answerReflection(index: ReflectionIndex, req: RequestShape): ResponseInit["messageResponse"] {
  const request = req.messageRequest;
  switch (request.case) {
    case "listServices":
      return {
        case: "listServicesResponse",
        value: { service: index.serviceNames.map((name) => ({ name })) },
      };
    case "fileByFilename": {
      const file = index.fileByName(request.value);
      if (!file) return errorResponse(Code.NotFound, `file "${request.value}" is not known to this server`);
      return { case: "fileDescriptorResponse", value: { fileDescriptorProto: index.encodeWithDependencies(file) } };
    }
    case "fileContainingSymbol": {
      const file = index.fileContainingSymbol(request.value);
      if (!file) return errorResponse(Code.NotFound, `symbol "${request.value}" is not known to this server`);
      return { case: "fileDescriptorResponse", value: { fileDescriptorProto: index.encodeWithDependencies(file) } };
    }
    case "fileContainingExtension": {
      const { containingType, extensionNumber } = request.value;
      const ext = index.extensionsOf(containingType).find((e) => e.number === extensionNumber);
      if (!ext) {
        return errorResponse(
          Code.NotFound,
          `no extension ${extensionNumber} of "${containingType}" is known to this server`,
        );
      }
      return { case: "fileDescriptorResponse", value: { fileDescriptorProto: index.encodeWithDependencies(ext.file) } };
    }
    case "allExtensionNumbersOfType": {
      const typeName = request.value.replace(/^\./, "");
      if (!index.hasMessage(typeName))
        return errorResponse(Code.NotFound, `message type "${typeName}" is not known to this server`);
      return {
        case: "allExtensionNumbersResponse",
        value: { baseTypeName: typeName, extensionNumber: index.extensionsOf(typeName).map((e) => e.number) },
      };
    }
    default:
      return errorResponse(Code.InvalidArgument, "the reflection request sets none of its message_request fields");
  }
}

/**
 * Registers gRPC server reflection, both `grpc.reflection.v1` and
 * `grpc.reflection.v1alpha`, describing `services` and every file they use.
 * Each request on the bidi stream gets exactly one response, in order.
 */
export function registerReflectionService(router: ConnectRouter, services: readonly DescService[]): ReflectionIndex {
  const index = new ReflectionIndex(services, documentedDescriptors());
  router.service(v1.ServerReflection, {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) {
        yield create(v1.ServerReflectionResponseSchema, {
          validHost: req.host,
          originalRequest: req,
          messageResponse: answerReflection(index, req),
        });
      }
    },
  });
  router.service(v1alpha.ServerReflection, {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) {
        yield create(v1alpha.ServerReflectionResponseSchema, {
          validHost: req.host,
          originalRequest: req,
          messageResponse: answerReflection(index, req) as MessageInitShape<
            typeof v1alpha.ServerReflectionResponseSchema
          >["messageResponse"],
        });
      }
    },
  });
  return index;
}
