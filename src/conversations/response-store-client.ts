// The surface's side of the response store: one Durable Object per response id, reached
// through the RESPONSES binding. Without the binding nothing is stored (the response says
// `store: false`) and a stored id cannot be found: docs/responses.md.
import type { ResponseStore } from "./response-store-do.js";
import type { StoredResponse, StoredResponseInput } from "./stored-response.js";

export interface ResponseStoreBinding {
  idFromName(name: string): DurableObjectId;
  get(id: DurableObjectId): DurableObjectStub<ResponseStore>;
}

export class ResponseStoreClient {
  constructor(private readonly binding: ResponseStoreBinding) {}

  private stub(id: string): DurableObjectStub<ResponseStore> {
    return this.binding.get(this.binding.idFromName(id));
  }

  async put(record: StoredResponseInput): Promise<void> {
    await this.stub(record.id).put(record);
  }

  async get(id: string, owner: string): Promise<StoredResponse | undefined> {
    return (await this.stub(id).get(id, owner)) ?? undefined;
  }

  async delete(id: string, owner: string): Promise<boolean> {
    return this.stub(id).delete(id, owner);
  }
}
