// The widget test page's controller (GET /api/test-widget): mounts the widget with the settings
// and token from the page's JSON data block, applies every change of the settings form to the
// widget at once, and keeps the embed snippet and the link to this configuration in step.
(function () {
  'use strict';

  var config = JSON.parse(document.getElementById('intake-widget-config').textContent);
  if (config.state !== 'ready') return;

  var form = document.getElementById('tw-config');
  var agent = document.getElementById('cfg-agent');
  var title = document.getElementById('cfg-title');
  var greeting = document.getElementById('cfg-greeting');
  var color = document.getElementById('cfg-color');
  var snippet = document.getElementById('tw-snippet');
  var link = document.getElementById('tw-link');
  var copyButton = document.getElementById('tw-copy');
  var copyStatus = document.getElementById('tw-copy-status');
  var expiry = document.getElementById('tw-expiry');

  /** Text for a double-quoted HTML attribute. */
  function attr(value) {
    return String(value)
      .replace(/&/g, '&amp;')
      .replace(/"/g, '&quot;')
      .replace(/'/g, '&#39;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;');
  }

  /**
   * The text's first `max` characters, counted as the service counts them: code points (an emoji
   * is one). A field's maxlength counts UTF-16 code units (an emoji is two), so the title's and the
   * greeting's are twice their limits and only bound a paste; this keeps them at their limits.
   */
  function clip(text, max) {
    if (text.length <= max) return text;
    var chars = Array.from(text);
    return chars.length <= max ? text : chars.slice(0, max).join('');
  }

  [
    [title, 100],
    [greeting, 1000],
  ].forEach(function (pair) {
    // On the field itself, so before the form's listener renders the change.
    pair[0].addEventListener('input', function () {
      var clipped = clip(pair[0].value, pair[1]);
      if (clipped !== pair[0].value) pair[0].value = clipped;
    });
  });

  function settings() {
    var position = form.querySelector('input[name="position"]:checked');
    return {
      agentId: agent.value,
      title: title.value,
      greeting: greeting.value,
      primaryColor: color.value,
      position: position && position.value === 'left' ? 'left' : 'right',
    };
  }

  /**
   * The <script> tag that embeds the widget with these settings (as page.ts's embedSnippet), for
   * the firm's widget key, or a placeholder in its place while the firm has none.
   */
  function snippetFor(s) {
    var attributes = [
      ['src', config.script.src],
      ['integrity', config.script.integrity],
      ['crossorigin', 'anonymous'],
      ['data-key', config.snippetKey],
      ['data-agent-id', s.agentId],
      ['data-title', s.title],
      ['data-greeting', s.greeting],
      ['data-primary-color', s.primaryColor],
      ['data-position', s.position],
    ].filter(function (pair) {
      return pair[1] !== '';
    });
    var text = attributes
      .map(function (pair) {
        return ' ' + pair[0] + '="' + attr(pair[1]) + '"';
      })
      .join('');
    return '<script' + text + ' async></script>';
  }

  /** This page with these settings, as a link (the values are URL-encoded). */
  function pageLink(s) {
    var query = new URLSearchParams({ firmSlug: config.firmSlug, agentId: s.agentId });
    if (s.title !== '') query.set('title', s.title);
    if (s.greeting !== '') query.set('greeting', s.greeting);
    query.set('primaryColor', s.primaryColor);
    query.set('position', s.position);
    return config.pageUrl + '?' + query.toString();
  }

  // The form shows the page's settings (a browser restoring old field values must not win).
  var initial = config.settings;
  agent.value = initial.agentId;
  title.value = initial.title;
  greeting.value = initial.greeting;
  color.value = initial.primaryColor;
  form.querySelector(
    'input[name="position"][value="' + (initial.position === 'left' ? 'left' : 'right') + '"]',
  ).checked = true;
  expiry.textContent = new Date(config.tokenExpiresAt).toLocaleTimeString([], {
    hour: '2-digit',
    minute: '2-digit',
  });

  var widget = window.IntakeWidget.mount({
    apiBase: '',
    token: config.token,
    firmSlug: config.firmSlug,
    agentId: initial.agentId,
    title: initial.title,
    greeting: initial.greeting,
    primaryColor: initial.primaryColor,
    position: initial.position,
  });

  function render() {
    var s = settings();
    widget.update(s);
    snippet.textContent = snippetFor(s);
    link.href = pageLink(s);
    copyStatus.textContent = '';
  }

  form.addEventListener('input', render);
  form.addEventListener('change', render);
  form.addEventListener('submit', function (event) {
    event.preventDefault();
  });

  copyButton.addEventListener('click', function () {
    var text = snippet.textContent;
    var done = function () {
      copyStatus.textContent = 'Copied.';
    };
    var selectIt = function () {
      var range = document.createRange();
      range.selectNodeContents(snippet);
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      copyStatus.textContent = 'Selected: press Ctrl+C (or \u2318C) to copy.';
    };
    if (navigator.clipboard && window.isSecureContext)
      navigator.clipboard.writeText(text).then(done, selectIt);
    else selectIt();
  });

  render();
})();
