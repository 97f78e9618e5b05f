// The proto must stay wire- and JSON-compatible with the upstream vLLM servicer: every field
// of pd-reference.md section 1.2 with its number, type and cardinality, checked against the
// generated descriptors.
import type { DescField, DescMessage } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import * as engine from "../../src/gen/vllm_engine_pb.js";
import * as common from "../../src/gen/common_pb.js";

// message: "name=number:type" ("?" optional, "*" repeated, "{k,v}" map, "|oneof" member)
const CONTRACT: Record<string, string> = {
  SamplingParams: "temperature=1:float? top_p=2:float top_k=3:uint32 min_p=4:float frequency_penalty=5:float presence_penalty=6:float repetition_penalty=7:float max_tokens=8:uint32? min_tokens=9:uint32 stop=10:string* stop_token_ids=11:uint32* skip_special_tokens=12:bool spaces_between_special_tokens=13:bool ignore_eos=14:bool n=15:uint32 json_schema=16:string|constraint regex=17:string|constraint grammar=18:string|constraint structural_tag=19:string|constraint json_object=20:bool|constraint choice=21:ChoiceConstraint|constraint logprobs=22:int32? prompt_logprobs=23:int32? seed=24:int32? include_stop_str_in_output=25:bool logit_bias=26:{int32,float} truncate_prompt_tokens=27:int32?",
  ChoiceConstraint: "choices=1:string*",
  TokenizedInput: "original_text=1:string input_ids=2:uint32*",
  TensorData: "inline=1:bytes|payload shape=2:uint32* dtype=3:string shm=4:ShmHandle|payload remote=5:RemoteTensorHandle|payload",
  PlaceholderRange: "offset=1:uint32 length=2:uint32",
  MultimodalInputs: "pixel_values=2:TensorData model_specific_tensors=3:{string,TensorData} im_token_id=4:uint32? mm_placeholders=5:PlaceholderRange* mm_hashes=6:string* batched_keys=7:string* flat_keys=8:{string,string} keep_on_cpu_keys=9:string* modality=10:Modality",
  GenerateRequest: "request_id=1:string tokenized=2:TokenizedInput|input text=3:string|input sampling_params=4:SamplingParams stream=5:bool kv_transfer_params=6:KvTransferParams mm_inputs=7:MultimodalInputs kv_transfer_params_json=8:string? data_parallel_rank=9:int32?",
  KvTransferParams: "remote_host=1:string remote_port=2:uint32",
  OutputLogProbs: "token_logprobs=1:float* token_ids=2:uint32* top_logprobs=3:TopLogProbs*",
  InputLogProbs: "token_logprobs=1:InputTokenLogProb* token_ids=2:uint32* top_logprobs=3:TopLogProbs*",
  InputTokenLogProb: "value=1:float?",
  TopLogProbs: "values=1:float* token_ids=2:uint32*",
  GenerateResponse: "chunk=1:GenerateStreamChunk|response complete=2:GenerateComplete|response",
  GenerateStreamChunk: "token_ids=1:uint32* prompt_tokens=2:uint32 completion_tokens=3:uint32 cached_tokens=4:uint32 output_logprobs=5:OutputLogProbs input_logprobs=6:InputLogProbs index=7:uint32",
  GenerateComplete: "output_ids=1:uint32* finish_reason=2:string prompt_tokens=3:uint32 completion_tokens=4:uint32 cached_tokens=5:uint32 output_logprobs=6:OutputLogProbs input_logprobs=7:InputLogProbs index=8:uint32 kv_transfer_params=9:KvTransferParams matched_token_id=10:uint32|matched_stop matched_stop_str=11:string|matched_stop kv_transfer_params_json=12:string?",
  EmbedRequest: "request_id=1:string tokenized=2:TokenizedInput",
  EmbedResponse: "embedding=1:float* prompt_tokens=2:uint32 embedding_dim=3:uint32",
  HealthCheckResponse: "healthy=1:bool message=2:string",
  AbortRequest: "request_ids=1:string*",
  GetModelInfoResponse: "model_path=1:string is_generation=2:bool max_context_length=3:uint32 vocab_size=4:uint32 supports_vision=5:bool served_model_name=6:string tokenizer_path=7:string model_type=8:string architectures=9:string* eos_token_ids=10:int32* pad_token_id=11:int32 bos_token_id=12:int32 max_req_input_len=13:int32 default_sampling_params_json=14:string",
  GetServerInfoResponse: "active_requests=1:uint32 is_paused=2:bool last_receive_timestamp=3:double uptime_seconds=4:double server_type=5:string kv_connector=6:string kv_role=7:string kv_engine_id=8:string data_parallel_size=9:int32 shm_namespace_id=10:string",
  GetLoadsRequest: "dp_rank=1:int32? include=2:string*",
  GetLoadsResponse: "timestamp=1:string version=2:string dp_rank_count=3:int32 loads=4:SchedulerLoad*",
  SchedulerLoad: "dp_rank=1:int32 num_running_reqs=2:int32 num_waiting_reqs=3:int32 num_total_reqs=4:int32 num_used_tokens=5:int32 max_total_num_tokens=6:int32 token_usage=7:double gen_throughput=8:double cache_hit_rate=9:double utilization=10:double max_running_requests=11:int32",
  "common.GetTokenizerChunk": "data=1:bytes sha256=2:string",
  "common.SubscribeKvEventsRequest": "start_sequence_number=1:uint64",
  "common.KvEventBatch": "sequence_number=1:uint64 timestamp=2:double events=3:KvCacheEvent* dp_rank=4:int32?",
  "common.ShmHandle": "name=1:string offset=2:uint64 nbytes=3:uint64 owner_id=4:string",
  "common.RemoteTensorHandle": "transport=1:string descriptor=2:bytes nbytes=3:uint64",
};

const SCALARS = ["double", "float", "int64", "uint64", "int32", "fixed64", "fixed32", "bool", "string", "group", "message", "bytes", "uint32", "enum", "sfixed32", "sfixed64", "sint32", "sint64"];
const scalarName = (n: number) => SCALARS[n - 1] ?? `scalar${n}`;

function describeField(f: DescField): string {
  const type = (k: DescField) =>
    k.fieldKind === "scalar" ? scalarName(k.scalar) : k.fieldKind === "message" ? k.message.name : k.fieldKind === "enum" ? k.enum.name : "";
  let t: string;
  if (f.fieldKind === "map") {
    const v = f.mapKind === "scalar" ? scalarName(f.scalar) : f.mapKind === "message" ? f.message.name : f.enum.name;
    t = `{${scalarName(f.mapKey)},${v}}`;
  } else if (f.fieldKind === "list") {
    t = `${f.listKind === "scalar" ? scalarName(f.scalar) : f.listKind === "message" ? f.message.name : f.enum.name}*`;
  } else {
    t = type(f);
    if (f.oneof) t += `|${f.oneof.name}`;
    else if (f.presence === 1 /* EXPLICIT */ && f.fieldKind === "scalar") t += "?";
  }
  return `${f.name}=${f.number}:${t}`;
}

const schemaOf = (key: string): DescMessage => {
  const [mod, name] = key.startsWith("common.") ? [common, key.slice(7)] : [engine, key];
  const schema = (mod as Record<string, unknown>)[`${name}Schema`] as DescMessage | undefined;
  if (!schema) throw new Error(`no message ${key}`);
  return schema;
};

describe("wire contract (pd-reference 1.2)", () => {
  it.each(Object.entries(CONTRACT))("%s", (key, spec) => {
    const schema = schemaOf(key);
    const actual = schema.fields.map(describeField).sort();
    expect(actual).toEqual(spec.split(" ").sort());
  });
  it("packages, service and methods are upstream's", () => {
    expect(engine.GenerateRequestSchema.typeName).toBe("vllm.grpc.engine.GenerateRequest");
    expect(common.ShmHandleSchema.typeName).toBe("smg.grpc.common.ShmHandle");
    expect(engine.VllmEngine.typeName).toBe("vllm.grpc.engine.VllmEngine");
    expect(engine.VllmEngine.methods.map((m) => `${m.name}:${m.methodKind}`)).toEqual([
      "Generate:server_streaming", "Embed:unary", "HealthCheck:unary", "Abort:unary", "GetModelInfo:unary",
      "GetServerInfo:unary", "GetLoads:unary", "GetTokenizer:server_streaming", "SubscribeKvEvents:server_streaming",
    ]);
    expect(Object.entries(common.Modality).filter(([k]) => isNaN(Number(k)))).toEqual([
      ["MODALITY_UNSPECIFIED", 0], ["IMAGE", 1], ["AUDIO", 2], ["VIDEO", 3],
    ]);
  });
});
