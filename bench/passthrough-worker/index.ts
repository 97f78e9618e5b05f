// A bare pass-through Worker: one fetch to the same path on UPSTREAM, the response streamed
// back untouched. It is what any Worker in front of the engines costs at least.
interface PassthroughEnv {
  UPSTREAM: string;
}

export default {
  fetch(request: Request, env: PassthroughEnv): Promise<Response> {
    const url = new URL(request.url);
    return fetch(`${env.UPSTREAM}${url.pathname}${url.search}`, request);
  },
};
