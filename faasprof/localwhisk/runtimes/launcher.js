// Node.js launcher: loads an action once, then serves activations over pipes (actionloop-like).
// Same protocol as launcher.py: JSON lines on stdin, JSON replies on fd $__LW_FD (default 3),
// sentinel lines on stdout and stderr after every init and run. A function that throws is a
// developer error ("An error has occurred: ..."), as in OpenWhisk's Node.js runtime; a rejected
// promise is an application error; a result that is not an object is a developer error.
'use strict';
const fs = require('fs');
const path = require('path');
const Module = require('module');
const readline = require('readline');

const SENTINEL = 'XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX';
const replyFd = parseInt(process.env.__LW_FD || '3', 10);
delete process.env.__LW_FD;
if (process.env.__LW_CWD) process.chdir(process.env.__LW_CWD);
delete process.env.__LW_CWD;
// The sandbox's own user (given when the server is root): the action holds no privilege.
if (process.env.__LW_UID) {
  const uid = parseInt(process.env.__LW_UID, 10);
  process.setgroups([]);
  process.setgid(uid);
  process.setuid(uid);
}
delete process.env.__LW_UID;

function reply(obj) {
  const buf = Buffer.from(JSON.stringify(obj) + '\n', 'utf8');
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(replyFd, buf, off, buf.length - off);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
    }
  }
}

function endOfActivation() {
  // Pipes are synchronous on Linux, so these lines are in the pipes before the reply is sent.
  process.stdout.write(SENTINEL + '\n');
  process.stderr.write(SENTINEL + '\n');
}

let action = null;
let queue = Promise.resolve();

function load(init) {
  for (const [k, v] of Object.entries(init.env || {})) {
    process.env[k] = typeof v === 'string' ? v : JSON.stringify(v);
  }
  const mainName = init.main || 'main';
  if (init.dir) {
    process.chdir(init.dir);
    const exported = require(init.dir);
    const fn = exported && (typeof exported[mainName] === 'function' ? exported[mainName] : null);
    if (!fn) throw new Error(`Action entrypoint '${mainName}' is not a function.`);
    return fn;
  }
  const filename = path.join(process.cwd(), 'index.js');
  const mod = new Module(filename, null);
  mod.filename = filename;
  mod.paths = Module._nodeModulePaths(process.cwd());
  const req = Module.createRequire(filename);
  const wrapper = new Function('exports', 'require', 'module', '__filename', '__dirname',
    `${init.code || ''}\n;return (typeof ${mainName} === 'function') ? ${mainName} : ` +
    `((module.exports && typeof module.exports.${mainName} === 'function') ? module.exports.${mainName} : null);`);
  const fn = wrapper.call(mod.exports, mod.exports, req, mod, filename, process.cwd());
  if (typeof fn !== 'function') throw new Error(`Action entrypoint '${mainName}' is not a function.`);
  return fn;
}

async function handle(message) {
  if (message.init) {
    try {
      action = load(message.init);
    } catch (e) {
      console.error(e && e.stack ? e.stack : String(e));
      endOfActivation();
      reply({init_error: 'Initialization has failed due to: ' + (e && e.stack ? e.stack : String(e))});
      return;
    }
    endOfActivation();
    reply({ok: true});
    return;
  }
  if (!action) {
    endOfActivation();
    reply({developer_error: 'The action was not initialized.'});
    return;
  }
  for (const [k, v] of Object.entries(message)) {
    if (k !== 'value') process.env['__OW_' + k.toUpperCase()] = typeof v === 'string' ? v : JSON.stringify(v);
  }
  let result;
  try {
    result = action(message.value || {});
  } catch (e) {
    console.error(e && e.stack ? e.stack : String(e));
    endOfActivation();
    reply({developer_error: 'An error has occurred: ' + String(e)});
    return;
  }
  if (result && typeof result.then === 'function') {
    try {
      result = await result;
    } catch (e) {
      endOfActivation();
      const error = (e && typeof e === 'object' && !(e instanceof Error)) ? e : {error: String(e && e.message ? e.message : e)};
      reply({result: error.error !== undefined ? error : {error}});
      return;
    }
  }
  endOfActivation();
  if (result === undefined || result === null) result = {};
  if (typeof result !== 'object') {
    reply({developer_error: 'The action did not return a dictionary.'});
    return;
  }
  try {
    reply({result});
  } catch (e) {
    reply({developer_error: 'The action did not produce a valid JSON response: ' + String(e)});
  }
}

const rl = readline.createInterface({input: process.stdin, crlfDelay: Infinity});
rl.on('line', (line) => {
  let message;
  try {
    message = JSON.parse(line);
  } catch (e) {
    endOfActivation();
    reply({developer_error: 'localwhisk launcher: bad request line: ' + String(e)});
    return;
  }
  queue = queue.then(() => handle(message));
});
rl.on('close', () => process.exit(0));
reply({ok: true});
