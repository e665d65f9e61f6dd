// The Intake chat widget: a launcher button and a chat panel that talk to the service's chat
// routes (create-chat, chat-completion) with a widget token.
//
//   IntakeWidget.mount({ firmSlug, agentId, token, apiBase, title, greeting, primaryColor, position })
//     -> { update(settings), open(), close(), destroy() }
//
// or, embedded, from its own <script> tag's data attributes (data-firm-slug, data-agent-id,
// data-token, data-title, data-greeting, data-primary-color, data-position).
//
// Every text it shows is set as text (textContent), never parsed as markup; colours are checked
// against #rrggbb before they reach a style; nothing is evaluated. It runs under a strict
// Content-Security-Policy: no inline scripts, no style attributes (styles go through the CSSOM).
(function () {
  'use strict';

  var DEFAULTS = {
    title: 'Chat with us',
    greeting: 'Hi! How can we help you today?',
    primaryColor: '#1d4ed8',
    position: 'right',
  };
  var COLOR = /^#[0-9a-fA-F]{6}$/;
  var MAX_MESSAGE = 4000;
  var SVG = 'http://www.w3.org/2000/svg';
  var counter = 0;

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
      return typeof value === 'string' && value.trim() !== '' ? value.slice(0, max) : fallback;
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

  function mount(options) {
    var id = 'intake-widget-' + ++counter;
    var token = String(options.token || '');
    var apiBase = String(options.apiBase || '').replace(/\/+$/, '');
    var settings = clean(options);
    var chatId = null;
    var starting = null;
    var sending = false;

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
    var closeButton = el('button', 'iw-close', '\u00d7');
    closeButton.type = 'button';
    closeButton.setAttribute('aria-label', 'Close chat');
    header.appendChild(heading);
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
    input.maxLength = MAX_MESSAGE;
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
    (options.container || document.body).appendChild(root);

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
      root.style.setProperty('--iw-primary', settings.primaryColor);
      root.style.setProperty('--iw-on-primary', textOn(settings.primaryColor));
      if (greetingBubble !== null) greetingBubble.lastChild.textContent = settings.greeting;
    }

    function failure(response, body) {
      var code = body && body.error && body.error.code;
      if (response.status === 401)
        return 'This chat session has expired. Reload the page to start a new one.';
      if (code === 'chat_not_active')
        return 'This conversation has ended. Send a message to start a new one.';
      // The server says which limit it was: too fast, or a chat at its length limit.
      if (response.status === 429)
        return (
          (body && body.error && body.error.message) ||
          'Too many messages at once. Please wait a moment and try again.'
        );
      return (body && body.error && body.error.message) || 'The message could not be sent. Please try again.';
    }

    async function call(path, payload) {
      var response = await fetch(apiBase + path, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + token },
        body: JSON.stringify(payload),
        credentials: 'omit',
        referrerPolicy: 'no-referrer',
      });
      var body = null;
      try {
        body = await response.json();
      } catch {
        body = null;
      }
      if (!response.ok) {
        var error = new Error(failure(response, body));
        error.code = body && body.error && body.error.code;
        throw error;
      }
      return body;
    }

    /**
     * Opens the chat once; every caller waits for the same request. A chat that arrives after the
     * agent was changed (resetConversation dropped its request) is left unused.
     */
    function ensureChat() {
      if (chatId !== null) return Promise.resolve(chatId);
      if (starting !== null) return starting;
      var attempt = call('/api/v2/create-chat', {
        agentId: settings.agentId,
        firmSlug: settings.firmSlug,
      }).then(
        function (chat) {
          if (starting !== attempt) return ensureChat();
          chatId = chat.chat_id;
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
    root.addEventListener('keydown', function (event) {
      if (event.key === 'Escape' && !panel.hidden) {
        event.preventDefault();
        close();
      }
    });
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var text = input.value.trim();
      if (text === '' || sending) return;
      input.value = '';
      send(text.slice(0, MAX_MESSAGE));
    });

    resetConversation();
    apply();

    return {
      element: root,
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
        root.remove();
      },
    };
  }

  window.IntakeWidget = { mount: mount, defaults: Object.assign({}, DEFAULTS) };

  // Embedded with data attributes: mount on this script's settings once the page has a body.
  var script = document.currentScript;
  if (script && script.dataset && script.dataset.token && script.dataset.firmSlug && script.dataset.agentId) {
    var data = script.dataset;
    var start = function () {
      mount({
        apiBase: new URL(script.src, document.baseURI).origin,
        token: data.token,
        firmSlug: data.firmSlug,
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
