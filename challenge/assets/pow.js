// guardd challenge: find n so that SHA-256(challenge + n) has d leading zero
// bits, then go to the solve URL. Pure JavaScript SHA-256: crypto.subtle
// exists only in secure contexts (HTTPS), and one call per hash is slower.
(function () {
  "use strict";
  var root = document.getElementById("guardd-challenge");
  var status = document.getElementById("guardd-status");
  if (!root || !status) return;
  var c = root.getAttribute("data-challenge");
  var d = parseInt(root.getAttribute("data-difficulty"), 10);
  var ret = root.getAttribute("data-return");
  var K = new Int32Array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]);
  var W = new Int32Array(64);
  function block(H, m, o) {
    var i, x, y, a, b, cc, dd, e, f, g, h, t1, t2;
    for (i = 0; i < 16; i++) {
      x = o + i * 4;
      W[i] = m[x] << 24 | m[x + 1] << 16 | m[x + 2] << 8 | m[x + 3];
    }
    for (i = 16; i < 64; i++) {
      x = W[i - 15]; y = W[i - 2];
      W[i] = (W[i - 16] + ((x >>> 7 | x << 25) ^ (x >>> 18 | x << 14) ^ (x >>> 3)) + W[i - 7] +
        ((y >>> 17 | y << 15) ^ (y >>> 19 | y << 13) ^ (y >>> 10))) | 0;
    }
    a = H[0]; b = H[1]; cc = H[2]; dd = H[3]; e = H[4]; f = H[5]; g = H[6]; h = H[7];
    for (i = 0; i < 64; i++) {
      t1 = (h + ((e >>> 6 | e << 26) ^ (e >>> 11 | e << 21) ^ (e >>> 25 | e << 7)) + ((e & f) ^ (~e & g)) + K[i] + W[i]) | 0;
      t2 = (((a >>> 2 | a << 30) ^ (a >>> 13 | a << 19) ^ (a >>> 22 | a << 10)) + ((a & b) ^ (a & cc) ^ (b & cc))) | 0;
      h = g; g = f; f = e; e = (dd + t1) | 0; dd = cc; cc = b; b = a; a = (t1 + t2) | 0;
    }
    H[0] = H[0] + a | 0; H[1] = H[1] + b | 0; H[2] = H[2] + cc | 0; H[3] = H[3] + dd | 0;
    H[4] = H[4] + e | 0; H[5] = H[5] + f | 0; H[6] = H[6] + g | 0; H[7] = H[7] + h | 0;
  }
  var init = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
  // The challenge's whole 64-byte blocks are hashed once (the midstate);
  // each try hashes only the tail, the counter and the padding.
  var full = c.length - c.length % 64;
  var mid = new Int32Array(init);
  var pre = new Uint8Array(full);
  var i;
  for (i = 0; i < full; i++) pre[i] = c.charCodeAt(i);
  for (i = 0; i < full; i += 64) block(mid, pre, i);
  var tail = c.slice(full);
  var buf = new Uint8Array(192);
  var H = new Int32Array(8);
  function zeros(H) {
    var n = 0, k, z;
    for (k = 0; k < 8; k++) {
      z = Math.clz32(H[k]);
      n += z;
      if (z < 32) break;
    }
    return n;
  }
  function tryN(n) {
    var s = tail + n, len = s.length, k;
    for (k = 0; k < len; k++) buf[k] = s.charCodeAt(k);
    buf[len] = 0x80;
    var blocks = len + 9 <= 64 ? 1 : 2;
    var end = blocks * 64;
    for (k = len + 1; k < end - 4; k++) buf[k] = 0;
    var bitsLen = (full + len) * 8;
    buf[end - 4] = bitsLen >>> 24; buf[end - 3] = bitsLen >>> 16; buf[end - 2] = bitsLen >>> 8; buf[end - 1] = bitsLen;
    H.set(mid);
    block(H, buf, 0);
    if (blocks === 2) block(H, buf, 64);
    return zeros(H) >= d;
  }
  var n = 0, started = Date.now(), told = started;
  function step() {
    var until = Date.now() + 50;
    for (;;) {
      for (var j = 0; j < 2000; j++, n++) {
        if (tryN(n)) {
          status.textContent = "Done. Taking you to the page you asked for…";
          var ms = Date.now() - started;
          root.setAttribute("data-solved-ms", String(ms));
          location.replace("/.guardd/solve?c=" + c + "&n=" + n + "&r=" + encodeURIComponent(ret));
          return;
        }
      }
      if (Date.now() >= until) break;
    }
    if (Date.now() - told > 3000) {
      told = Date.now();
      status.textContent = "Still working… (" + Math.round((told - started) / 1000) + " seconds)";
    }
    setTimeout(step, 0);
  }
  status.textContent = "Working… this takes a moment.";
  setTimeout(step, 0);
})();
