// Cluster choice (ARCHITECTURE decision 18): distance, health, saturation, stickiness; and the
// per-cluster state and pools the pipeline builds it from.
import { describe, expect, it } from "vitest";
import { chooseCluster, rankByDistance, type ClusterCandidate, type ClusterChoiceInput } from "../../../src/routing/clusters.js";
import { clientLocation, haversineKm, parseGeoHeader } from "../../../src/routing/geo.js";
import { clusterState, clustersOfModel, poolsInCluster, type EngineCondition } from "../../../src/routing/cluster-view.js";
import { ClusterMemory } from "../../../src/routing/cluster-memory.js";
import type { LoadedModel } from "../../../src/config/load.js";
import type { EngineConfig } from "../../../src/config/schema.js";

const FRANKFURT = { lat: 50.11, lon: 8.68 };
const VIRGINIA = { lat: 38.95, lon: -77.45 };
const LONDON = { lat: 51.5, lon: -0.13 };
const NEW_YORK = { lat: 40.71, lon: -74.0 };

const eu = (state: ClusterCandidate["state"] = "ready"): ClusterCandidate => ({ name: "eu", location: FRANKFURT, state });
const us = (state: ClusterCandidate["state"] = "ready"): ClusterCandidate => ({ name: "us", location: VIRGINIA, state });
const nowhere = (state: ClusterCandidate["state"] = "ready"): ClusterCandidate => ({ name: "default", state });

describe("chooseCluster", () => {
  const cases: [string, ClusterChoiceInput, ReturnType<typeof chooseCluster>][] = [
    ["a London client gets the nearest cluster", { candidates: [us(), eu()], client: LONDON }, { cluster: "eu", reason: "nearest" }],
    ["a New York client gets the nearest cluster", { candidates: [eu(), us()], client: NEW_YORK }, { cluster: "us", reason: "nearest" }],
    ["unknown location: the config's order", { candidates: [us(), eu()] }, { cluster: "us", reason: "nearest" }],
    ["an unplaced cluster ranks after placed ones", { candidates: [nowhere(), eu()], client: NEW_YORK }, { cluster: "eu", reason: "nearest" }],
    ["nearest down: the next nearest, as the nearest that is up", { candidates: [eu("down"), us()], client: LONDON }, { cluster: "us", reason: "nearest" }],
    ["nearest saturated: the next nearest that is ready", { candidates: [eu("saturated"), us()], client: LONDON }, { cluster: "us", reason: "failover" }],
    ["every cluster up is saturated: the nearest of them", { candidates: [eu("saturated"), us("saturated")], client: NEW_YORK }, { cluster: "us", reason: "saturated" }],
    ["saturated beats down", { candidates: [eu("saturated"), us("down")], client: NEW_YORK }, { cluster: "eu", reason: "saturated" }],
    ["every cluster down: none", { candidates: [eu("down"), us("down")], client: LONDON }, undefined],
    ["no clusters: none", { candidates: [] }, undefined],
    ["sticky keeps a farther ready cluster", { candidates: [eu(), us()], client: LONDON, sticky: "us" }, { cluster: "us", reason: "sticky" }],
    ["sticky cluster saturated: nearest ready instead", { candidates: [eu(), us("saturated")], client: LONDON, sticky: "us" }, { cluster: "eu", reason: "nearest" }],
    ["sticky cluster down: nearest ready instead", { candidates: [eu(), us("down")], client: NEW_YORK, sticky: "us" }, { cluster: "eu", reason: "nearest" }],
    ["sticky cluster no longer exists", { candidates: [eu(), us()], client: NEW_YORK, sticky: "ap" }, { cluster: "us", reason: "nearest" }],
  ];
  it.each(cases)("%s", (_name, input, expected) => {
    expect(chooseCluster(input)).toEqual(expected);
  });

  it("breaks distance ties by the given order", () => {
    const twin = { name: "eu2", location: FRANKFURT, state: "ready" as const };
    expect(rankByDistance([twin, eu()], LONDON).map((c) => c.name)).toEqual(["eu2", "eu"]);
    expect(rankByDistance([eu(), twin], LONDON).map((c) => c.name)).toEqual(["eu", "eu2"]);
  });
});

describe("geo", () => {
  it("measures great-circle distance", () => {
    expect(haversineKm(LONDON, NEW_YORK)).toBeCloseTo(5570, -1);
    expect(haversineKm(FRANKFURT, FRANKFURT)).toBe(0);
  });
  it.each([
    ["50.1,8.7", { lat: 50.1, lon: 8.7 }],
    [" -33.9 , 151.2 ", { lat: -33.9, lon: 151.2 }],
  ])("parses %s", (value, point) => {
    expect(parseGeoHeader("x-geo", value)).toEqual(point);
  });
  it.each(["", "50", "50,8,1", "91,0", "0,181", "a,b", ",8"])("refuses %j with a 400 naming the header", (value) => {
    expect(() => parseGeoHeader("x-geo", value)).toThrow(expect.objectContaining({ status: 400, code: "invalid_request", message: expect.stringContaining("x-geo") }));
  });
  it("prefers the configured header, then the edge's request.cf, and honours the header only when configured", () => {
    const headers = new Headers({ "x-geo": "1,2" });
    const cf = { latitude: "50.11", longitude: "8.68" };
    expect(clientLocation("x-geo", headers, cf)).toEqual({ lat: 1, lon: 2 });
    expect(clientLocation(undefined, headers, cf)).toEqual({ lat: 50.11, lon: 8.68 });
    expect(clientLocation("x-other", headers, cf)).toEqual({ lat: 50.11, lon: 8.68 });
    expect(clientLocation(undefined, headers, undefined)).toBeUndefined();
    expect(clientLocation(undefined, headers, { latitude: "", longitude: "8" })).toBeUndefined();
  });
});

const engine = (name: string, cluster?: string, transport: EngineConfig["transport"] = "connect"): EngineConfig => ({
  name, url: `http://${name}:1`, transport, labels: {}, ...(cluster ? { cluster } : {}),
});
const pools = (p: Partial<Pick<LoadedModel, "prefill" | "decode" | "encode" | "regular">>): LoadedModel => ({
  policy: { prefill: "round_robin", decode: "round_robin", regular: "round_robin" },
  pd: { decode_only_max_prompt_tokens: 0 },
  sse_relay: "native",
  generate_relay: "native",
  apis_via_chat: false,
  prefill: [], decode: [], encode: [], regular: [],
  ...p,
});
const CONNECT = new Set(["connect"]);
const cond = (unusable: string[] = [], busy: string[] = []): EngineCondition => ({
  usable: (e) => !unusable.includes(e.name),
  busy: (e) => busy.includes(e.name),
});

describe("clusterState", () => {
  const pd = pools({ prefill: [engine("p0"), engine("p1")], decode: [engine("d0"), engine("d1")] });
  it.each([
    ["every pool has a usable engine", cond(), "ready"],
    ["one prefill engine out", cond(["p0"]), "ready"],
    ["every prefill engine out", cond(["p0", "p1"]), "down"],
    ["every decode engine out", cond(["d0", "d1"]), "down"],
    ["every usable decode engine busy", cond(["d0"], ["d1"]), "saturated"],
    ["one decode engine busy", cond([], ["d1"]), "ready"],
    ["every prefill engine busy", cond([], ["p0", "p1"]), "saturated"],
  ] as const)("PD: %s -> %s", (_n, c, state) => {
    expect(clusterState(pd, CONNECT, c)).toBe(state);
  });

  it("a cluster with regular engines only needs them; one with prefill but no decode is down", () => {
    expect(clusterState(pools({ regular: [engine("r")] }), CONNECT, cond())).toBe("ready");
    expect(clusterState(pools({ regular: [engine("r")] }), CONNECT, cond(["r"]))).toBe("down");
    expect(clusterState(pools({ prefill: [engine("p")] }), CONNECT, cond())).toBe("down");
  });

  it("counts only the request's transports", () => {
    expect(clusterState(pools({ prefill: [engine("p", undefined, "openai-http")], decode: [engine("d")] }), CONNECT, cond())).toBe("down");
  });
});

describe("cluster pools", () => {
  const model = pools({
    prefill: [engine("p-eu", "eu"), engine("p-us", "us")],
    decode: [engine("d-us", "us"), engine("d-eu", "eu"), engine("d-default")],
    encode: [engine("e-eu", "eu")],
  });
  it("cuts every pool to one cluster", () => {
    const eu = poolsInCluster(model, "eu");
    expect([eu.prefill, eu.decode, eu.encode].map((p) => p.map((e) => e.name))).toEqual([["p-eu"], ["d-eu"], ["e-eu"]]);
    expect(poolsInCluster(model, "default").decode.map((e) => e.name)).toEqual(["d-default"]);
    expect(model.decode).toHaveLength(3); // not touched
  });
  it("lists the model's clusters in the config's order, then by name", () => {
    expect(clustersOfModel(model, { us: { lat: 0, lon: 0 }, eu: { lat: 0, lon: 0 } })).toEqual(["us", "eu", "default"]);
    expect(clustersOfModel(model, {})).toEqual(["default", "eu", "us"]);
  });
});

describe("ClusterMemory", () => {
  it("remembers a routing key's cluster, the newest keys within its bound", () => {
    const m = new ClusterMemory();
    m.remember("k", "eu");
    m.remember("k", "us");
    expect(m.stickyCluster("k")).toBe("us");
    for (let i = 0; i < 10_000; i++) m.remember(`x${i}`, "eu");
    expect(m.stickyCluster("k")).toBeUndefined();
    expect(m.stickyCluster("x9999")).toBe("eu");
  });
  it("counts a pushback for its window only", () => {
    const m = new ClusterMemory();
    m.notePushback("d0", 1_000);
    expect(m.pushedBack("d0", 2_999, 2_000)).toBe(true);
    expect(m.pushedBack("d0", 3_000, 2_000)).toBe(false);
    expect(m.pushedBack("d1", 1_000, 2_000)).toBe(false);
  });
});
