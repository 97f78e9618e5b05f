// The surface's side of the response store: one Durable Object per response id, reached
// through the RESPONSES binding. Without the binding nothing is stored (the response says
// `store: false`) and a stored id cannot be found: docs/responses.md.
import type { InputItemsPage, InputItemsQuery, UnknownCursor } from "./input-items.js";
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

  /** A page of the stored response's input items; undefined when `owner` has no such response. */
  async inputItems(id: string, owner: string, query: InputItemsQuery): Promise<InputItemsPage | UnknownCursor | undefined> {
    return ((await this.stub(id).inputItems(id, owner, query)) as InputItemsPage | UnknownCursor | undefined) ?? undefined;
  }

  async delete(id: string, owner: string): Promise<boolean> {
    return this.stub(id).delete(id, owner);
  }
}
