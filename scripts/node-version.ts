// The scripts need Node 22.12 or newer (wrangler, miniflare and the Workers test pool do).
// npm puts node_modules/.bin first on PATH, where the `node` devDependency installs Node 22, so
// this fails only when a script is started without npm on an older machine Node.
const MIN = [22, 12] as const;

/** Prints the Node this script runs on; exits with a message when it is older than 22.12. */
export function requireNode22(script: string): void {
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
  if (major < MIN[0] || (major === MIN[0] && minor < MIN[1])) {
    console.error(
      `${script}: Node ${process.version} is too old: Node ${MIN.join(".")} or newer is needed. Run it through npm ` +
        "(`npm test`, `npm start`: npm puts node_modules/.bin, with Node 22 from the `node` devDependency, first on PATH), " +
        "or put node_modules/.bin first on PATH yourself.",
    );
    process.exit(1);
  }
  console.log(`${script}: Node ${process.version}`);
}
