// The Intake chat widget (docs/widget.md): a launcher button and a chat panel, mounted in a
// shadow root of its own, that talk to the service's chat routes (create-chat, chat-completion,
// end-chat) with a widget token.
//
// Embedded on a firm's site by one tag (docs/widget.md#embed):
//   <script src=".../widget/v/<version>/widget.js" integrity="sha384-..." crossorigin="anonymous"
//     data-key="iwpk_..." data-agent-id data-title data-greeting data-primary-color data-position async>
// it asks POST /api/widget/session for a token with the key when the visitor first opens it (after
// solving the key's ALTCHA proof-of-work when the server asks for one), and again when that
// token expires. The test page mounts it with a token of its own:
//   IntakeWidget.mount({ firmSlug, agentId, token, apiBase, title, greeting, primaryColor, position })
//     -> { update(settings), open(), close(), destroy() }
//
// Every text it shows is set as text (textContent), never parsed as markup; colours are checked
// against #rrggbb before they reach a style; nothing is evaluated. Its styles (widget.css, put
// into this file by the server) are a constructed stylesheet adopted by the shadow root: no
// <style> element, no style attribute, so a host page's CSP needs no style-src for it, and the
// host's CSS and the widget's stay apart.
(function () {
  'use strict';

  var CSS_TEXT = /*@widget.css*/ '';
  var DEFAULTS = {
    title: 'Chat with us',
    greeting: 'Hi! How can we help you today?',
    primaryColor: '#1d4ed8',
    position: 'right',
  };
  var COLOR = /^#[0-9a-fA-F]{6}$/;
  /** A message's most characters, counted as the service counts them: code points (an emoji is one). */
  var MAX_MESSAGE = 4000;
  var SVG = 'http://www.w3.org/2000/svg';
  /** A token is renewed this long before it expires, so a request never carries a stale one. */
  var RENEW_MARGIN_MS = 60 * 1000;
  var counter = 0;
  var sheet = null;

  /**
   * The text's first `max` characters, counted as the service counts them: code points (an emoji
   * is one), never half of a surrogate pair.
   */
  function clip(text, max) {
    if (text.length <= max) return text;
    var chars = Array.from(text);
    return chars.length <= max ? text : chars.slice(0, max).join('');
  }

  function clipMessage(text) {
    return clip(text, MAX_MESSAGE);
  }

  /** The widget's stylesheet, constructed once and shared by every widget on the page. */
  function adoptStyles(shadow) {
    if ('adoptedStyleSheets' in shadow && typeof window.CSSStyleSheet === 'function') {
      if (sheet === null) {
        sheet = new window.CSSStyleSheet();
        sheet.replaceSync(CSS_TEXT);
      }
      shadow.adoptedStyleSheets = [sheet];
      return;
    }
    // Browsers without constructed stylesheets: a <style> element (a strict CSP may refuse it).
    var style = document.createElement('style');
    style.textContent = CSS_TEXT;
    shadow.appendChild(style);
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function chatIcon() {
    var svg = document.createElementNS(SVG, 'svg');
    svg.setAttribute('viewBox', '0 0 24 24');
    svg.setAttribute('width', '28');
    svg.setAttribute('height', '28');
    svg.setAttribute('aria-hidden', 'true');
    svg.setAttribute('focusable', 'false');
    var path = document.createElementNS(SVG, 'path');
    path.setAttribute('fill', 'currentColor');
    path.setAttribute(
      'd',
      'M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2zm3 6a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zm5 0a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zm5 0a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3z',
    );
    svg.appendChild(path);
    return svg;
  }

  /** Black or white, whichever reads better on `hex` (WCAG relative luminance). */
  function textOn(hex) {
    var channels = [1, 3, 5].map(function (i) {
      var c = parseInt(hex.slice(i, i + 2), 16) / 255;
      return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
    });
    var luminance = 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2];
    return luminance > 0.179 ? '#111827' : '#ffffff';
  }

  /** The settings with defaults filled in and anything malformed replaced by its default. */
  function clean(settings) {
    var s = settings || {};
    var text = function (value, fallback, max) {
      return typeof value === 'string' && value.trim() !== '' ? clip(value, max) : fallback;
    };
    return {
      firmSlug: typeof s.firmSlug === 'string' ? s.firmSlug : '',
      agentId: typeof s.agentId === 'string' ? s.agentId : '',
      title: text(s.title, DEFAULTS.title, 100),
      greeting: text(s.greeting, DEFAULTS.greeting, 1000),
      primaryColor:
        typeof s.primaryColor === 'string' && COLOR.test(s.primaryColor)
          ? s.primaryColor
          : DEFAULTS.primaryColor,
      position: s.position === 'left' ? 'left' : 'right',
    };
  }

  function hex(buffer) {
    return Array.prototype.map
      .call(new Uint8Array(buffer), function (b) {
        return (b < 16 ? '0' : '') + b.toString(16);
      })
      .join('');
  }

  /**
   * Solves an ALTCHA proof-of-work challenge (altcha.org's protocol, as altcha-lib issues it): the
   * number n in 0..maxnumber with SHA-256(salt + n) = challenge, found with crypto.subtle. Returns
   * the payload the server verifies: base64 of {algorithm, challenge, number, salt, signature, took}.
   */
  async function solveAltcha(challenge) {
    var started = Date.now();
    var encoder = new window.TextEncoder();
    var algorithm = /^SHA-(256|384|512)$/.test(challenge.algorithm) ? challenge.algorithm : 'SHA-256';
    var max = challenge.maxnumber || challenge.maxNumber || 1000000;
    for (var n = 0; n <= max; n++) {
      var digest = hex(await window.crypto.subtle.digest(algorithm, encoder.encode(challenge.salt + n)));
      if (digest === challenge.challenge) {
        return window.btoa(
          JSON.stringify({
            algorithm: challenge.algorithm,
            challenge: challenge.challenge,
            number: n,
            salt: challenge.salt,
            signature: challenge.signature,
            took: Date.now() - started,
          }),
        );
      }
    }
    throw new Error('The challenge could not be solved.');
  }

  /** The claims a JWT states about itself (its firm); the server is what checks it. */
  function claimsOf(token) {
    try {
      var part = token.replace(/^iwt_/, '').split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
      return JSON.parse(window.atob(part + '==='.slice((part.length + 3) % 4)));
    } catch {
      return {};
    }
  }

  function errorOf(body) {
    return (body && body.error) || {};
  }

  /** What a visitor is told when the chat cannot start or a message cannot be sent. */
  function failure(response, body) {
    var error = errorOf(body);
    if (error.code === 'origin_not_allowed')
      return (
        'This chat is not available on this website: its address is not among the widget key\u2019s ' +
        'allowed origins. If this is your site, add it to the key\u2019s allowed_origins.'
      );
    if (response.status === 429) {
      var wait = Number(response.headers.get('Retry-After'));
      var when =
        wait > 0
          ? ' Please try again in ' + Math.max(1, Math.ceil(wait / 60)) + ' min.'
          : ' Please try again later.';
      return 'Too many requests right now.' + when + (error.message ? ' (' + error.message + ')' : '');
    }
    if (response.status === 401) return 'This chat session has expired. Reload the page to start a new one.';
    if (error.code === 'chat_not_active')
      return 'This conversation has ended. Send a message to start a new one.';
    return error.message || 'Something went wrong. Please try again.';
  }

  async function request(url, init) {
    var response = await fetch(
      url,
      Object.assign({ credentials: 'omit', referrerPolicy: 'strict-origin', mode: 'cors' }, init),
    );
    var body = null;
    try {
      body = await response.json();
    } catch {
      body = null;
    }
    if (!response.ok) {
      var error = new Error(failure(response, body));
      error.status = response.status;
      error.code = errorOf(body).code;
      throw error;
    }
    return body;
  }

  /**
   * Widget tokens from a publishable key (POST /api/widget/session), renewed before they expire;
   * a session that asks for proof of work gets a solved challenge (GET /api/widget/challenge).
   */
  function keySessions(apiBase, key, agentId) {
    var current = null;
    var pending = null;

    async function ask(altcha) {
      var body = { key: key };
      if (agentId) body.agent_id = agentId;
      if (altcha) body.altcha = altcha;
      return request(apiBase + '/api/widget/session', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
    }

    async function open() {
      try {
        return await ask(null);
      } catch (err) {
        if (!/challenge|altcha/.test(String(err.code))) throw err;
        var challenge = await request(apiBase + '/api/widget/challenge?key=' + encodeURIComponent(key), {
          method: 'GET',
        });
        return ask(await solveAltcha(challenge));
      }
    }

    async function start() {
      var session;
      try {
        session = await open();
      } catch (err) {
        // A refused origin or key gets no CORS headers, so the page cannot read the answer: fetch
        // fails as it would with the service unreachable, and the message names each cause.
        if (err instanceof TypeError)
          err.message =
            'This chat is not available on this website: its address is not among the widget ' +
            'key\u2019s allowed origins, the key was revoked, or the chat service cannot be reached.';
        // An unknown key (mistyped, or deleted by the firm) is no expired session of the visitor's.
        else if (err.status === 401)
          err.message = 'This chat is not available right now: its widget key is unknown or was revoked.';
        throw err;
      }
      current = {
        token: session.token,
        expiresAt: Date.parse(session.expires_at),
        // create-chat names the firm: the token's own claim (the session answer does not repeat it).
        firmSlug: claimsOf(session.token).firm || '',
        agentId: session.agent.agent_id,
      };
      return current;
    }

    return {
      /** The current session, or a new one when there is none or it is about to expire. */
      get: function (renew) {
        if (!renew && current !== null && current.expiresAt - RENEW_MARGIN_MS > Date.now())
          return Promise.resolve(current);
        if (pending === null) {
          pending = start().finally(function () {
            pending = null;
          });
        }
        return pending;
      },
    };
  }

  /** A fixed token (the test page's): it cannot be renewed here. */
  function fixedSession(options) {
    var session = { token: String(options.token || ''), firmSlug: '', agentId: '' };
    return {
      get: function () {
        return Promise.resolve(session);
      },
    };
  }

  function mount(options) {
    var id = 'intake-widget-' + ++counter;
    var apiBase = String(options.apiBase || '').replace(/\/+$/, '');
    var settings = clean(options);
    var sessions = options.key
      ? keySessions(apiBase, String(options.key), settings.agentId)
      : fixedSession(options);
    var chatId = null;
    var starting = null;
    var sending = false;

    // The host element carries no styles of the page's choosing: everything is in its shadow root.
    var host = document.createElement('intake-widget');
    var shadow = host.attachShadow({ mode: 'open' });
    adoptStyles(shadow);

    var root = el('div', 'iw-root');
    root.id = id;
    var panel = el('section', 'iw-panel');
    panel.id = id + '-panel';
    panel.setAttribute('role', 'dialog');
    panel.setAttribute('aria-labelledby', id + '-title');
    panel.hidden = true;

    var header = el('header', 'iw-header');
    var heading = el('h2', 'iw-title');
    heading.id = id + '-title';
    var endButton = el('button', 'iw-end', 'End chat');
    endButton.type = 'button';
    endButton.hidden = true;
    var closeButton = el('button', 'iw-close', '\u00d7');
    closeButton.type = 'button';
    closeButton.setAttribute('aria-label', 'Close chat');
    header.appendChild(heading);
    header.appendChild(endButton);
    header.appendChild(closeButton);

    var log = el('div', 'iw-messages');
    log.setAttribute('role', 'log');
    log.setAttribute('aria-live', 'polite');
    log.setAttribute('aria-label', 'Conversation');
    log.tabIndex = 0;

    var status = el('p', 'iw-status');
    status.setAttribute('role', 'status');
    status.setAttribute('aria-live', 'polite');

    var form = el('form', 'iw-form');
    form.noValidate = true;
    var label = el('label', 'iw-visually-hidden', 'Message');
    label.htmlFor = id + '-input';
    var input = el('input', 'iw-input');
    input.id = id + '-input';
    input.type = 'text';
    input.autocomplete = 'off';
    // maxLength counts UTF-16 code units (an emoji is two), which would stop a message of emoji
    // at half the characters the service takes; it only bounds a paste, and clipMessage keeps the
    // text at MAX_MESSAGE characters as it is typed or pasted.
    input.maxLength = 2 * MAX_MESSAGE;
    input.placeholder = 'Type your message\u2026';
    var sendButton = el('button', 'iw-send', 'Send');
    sendButton.type = 'submit';
    form.appendChild(label);
    form.appendChild(input);
    form.appendChild(sendButton);

    panel.appendChild(header);
    panel.appendChild(log);
    panel.appendChild(status);
    panel.appendChild(form);

    var launcher = el('button', 'iw-launcher');
    launcher.type = 'button';
    launcher.setAttribute('aria-controls', panel.id);
    launcher.setAttribute('aria-expanded', 'false');
    launcher.appendChild(chatIcon());

    root.appendChild(panel);
    root.appendChild(launcher);
    shadow.appendChild(root);
    (options.container || document.body).appendChild(host);

    var greetingBubble = null;

    function addMessage(role, text) {
      var bubble = el('div', 'iw-msg iw-msg-' + role);
      bubble.appendChild(el('span', 'iw-visually-hidden', role === 'user' ? 'You: ' : 'Agent: '));
      bubble.appendChild(document.createTextNode(text));
      log.appendChild(bubble);
      log.scrollTop = log.scrollHeight;
      return bubble;
    }

    function setStatus(text, isError) {
      status.textContent = text;
      status.classList.toggle('iw-status-error', Boolean(isError));
    }

    function resetConversation() {
      chatId = null;
      starting = null;
      endButton.hidden = true;
      log.textContent = '';
      greetingBubble = addMessage('agent', settings.greeting);
      greetingBubble.classList.add('iw-msg-greeting');
      setStatus('');
    }

    function apply() {
      heading.textContent = settings.title;
      launcher.setAttribute('aria-label', (panel.hidden ? 'Open chat: ' : 'Close chat: ') + settings.title);
      root.classList.toggle('iw-left', settings.position === 'left');
      root.classList.toggle('iw-right', settings.position !== 'left');
      // Through the CSSOM: allowed under a CSP without 'unsafe-inline' for styles.
      root.style.setProperty('--iw-primary', settings.primaryColor);
      root.style.setProperty('--iw-on-primary', textOn(settings.primaryColor));
      if (greetingBubble !== null) greetingBubble.lastChild.textContent = settings.greeting;
    }

    /** A chat route with the session's token; an expired key session is renewed once. */
    async function call(path, payload, renewed) {
      var session = await sessions.get(false);
      try {
        return await request(apiBase + path, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + session.token },
          body: JSON.stringify(payload),
        });
      } catch (err) {
        if (err.status === 401 && options.key && !renewed) {
          await sessions.get(true);
          return call(path, payload, true);
        }
        throw err;
      }
    }

    /**
     * Opens the chat once; every caller waits for the same request. A chat that arrives after the
     * agent was changed (resetConversation dropped its request) is left unused.
     */
    function ensureChat() {
      if (chatId !== null) return Promise.resolve(chatId);
      if (starting !== null) return starting;
      var attempt = sessions
        .get(false)
        .then(function (session) {
          return call('/api/v2/create-chat', {
            // A key's token is bound to the agent its session chose.
            agentId: session.agentId || settings.agentId,
            firmSlug: session.firmSlug || settings.firmSlug,
          });
        })
        .then(
          function (chat) {
            if (starting !== attempt) return ensureChat();
            chatId = chat.chat_id;
            endButton.hidden = false;
            if (typeof chat.message === 'string' && chat.message !== '') addMessage('agent', chat.message);
            return chatId;
          },
          function (err) {
            if (starting === attempt) starting = null;
            throw err;
          },
        );
      starting = attempt;
      return attempt;
    }

    async function send(text) {
      if (sending) return;
      sending = true;
      sendButton.disabled = true;
      addMessage('user', text);
      setStatus('The agent is typing\u2026');
      try {
        var currentChat = await ensureChat();
        var reply = await call('/api/v2/chat-completion', { chatId: currentChat, message: text });
        addMessage('agent', reply.message);
        setStatus('');
      } catch (err) {
        if (err.code === 'chat_not_active') chatId = null;
        setStatus(err.message, true);
      } finally {
        sending = false;
        sendButton.disabled = false;
      }
    }

    /** end-chat: the service stores the conversation's analysis (and the lead, if contact was given). */
    async function endChat() {
      if (chatId === null || sending) return;
      sending = true;
      endButton.disabled = true;
      try {
        await call('/api/v2/end-chat', { chatId: chatId });
        chatId = null;
        endButton.hidden = true;
        setStatus('Thank you. This conversation has ended; send a message to start a new one.');
      } catch (err) {
        if (err.code === 'chat_not_active') chatId = null;
        setStatus(err.message, true);
      } finally {
        sending = false;
        endButton.disabled = false;
      }
    }

    function open() {
      if (!panel.hidden) return;
      panel.hidden = false;
      root.classList.add('iw-open');
      launcher.setAttribute('aria-expanded', 'true');
      apply();
      input.focus();
      ensureChat().catch(function (err) {
        setStatus(err.message, true);
      });
    }

    function close() {
      if (panel.hidden) return;
      panel.hidden = true;
      root.classList.remove('iw-open');
      launcher.setAttribute('aria-expanded', 'false');
      apply();
      launcher.focus();
    }

    launcher.addEventListener('click', function () {
      if (panel.hidden) open();
      else close();
    });
    closeButton.addEventListener('click', close);
    endButton.addEventListener('click', endChat);
    root.addEventListener('keydown', function (event) {
      if (event.key === 'Escape' && !panel.hidden) {
        event.preventDefault();
        close();
      }
    });
    input.addEventListener('input', function () {
      var clipped = clipMessage(input.value);
      if (clipped !== input.value) input.value = clipped;
    });
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var text = input.value.trim();
      if (text === '' || sending) return;
      input.value = '';
      send(clipMessage(text));
    });

    resetConversation();
    apply();

    return {
      element: host,
      open: open,
      close: close,
      /** Applies new settings at once; another agent starts a new conversation. */
      update: function (next) {
        var previousAgent = settings.agentId;
        settings = clean(Object.assign({}, settings, next));
        if (settings.agentId !== previousAgent) {
          resetConversation();
          if (!panel.hidden) {
            ensureChat().catch(function (err) {
              setStatus(err.message, true);
            });
          }
        }
        apply();
      },
      destroy: function () {
        host.remove();
      },
    };
  }

  var embedded = window.IntakeWidget !== undefined;
  window.IntakeWidget = window.IntakeWidget || { mount: mount, defaults: Object.assign({}, DEFAULTS) };

  // Embedded with a publishable key: mount on this tag's settings once the page has a body (once,
  // however many times the tag is on the page).
  var script = document.currentScript;
  if (!embedded && script && script.dataset && script.dataset.key) {
    var data = script.dataset;
    var start = function () {
      mount({
        apiBase: new URL(script.src, document.baseURI).origin,
        key: data.key,
        agentId: data.agentId,
        title: data.title,
        greeting: data.greeting,
        primaryColor: data.primaryColor,
        position: data.position,
      });
    };
    if (document.body) start();
    else document.addEventListener('DOMContentLoaded', start);
  }
})();
