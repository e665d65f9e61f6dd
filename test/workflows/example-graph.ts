// "When a call is analysed and the case is a car accident, create the Clio matter, mail the PI
// team, wait a day, and if no appointment was booked, call again" — drawn the way a React Flow
// builder saves it: positions, measured sizes, handles, selection state, a label edge style, and
// a sticky note (a pure UI node with no edges) that the service keeps and skips.

export const PI_TEAM = 'pi-team@firm.test';

export function exampleGraph(agentId: string) {
  const node = (id: string, type: string, x: number, y: number, data: Record<string, unknown>) => ({
    id,
    type,
    position: { x, y },
    data,
    width: 220,
    height: 64,
    measured: { width: 220, height: 64 },
    selected: false,
    dragging: false,
  });
  const edge = (id: string, source: string, target: string, sourceHandle: string | null = null) => ({
    id,
    source,
    target,
    sourceHandle,
    targetHandle: null,
    type: 'smoothstep',
    animated: false,
    markerEnd: { type: 'arrowclosed' },
    ...(sourceHandle === null ? {} : { label: sourceHandle === 'true' ? 'yes' : 'no' }),
  });
  return {
    nodes: [
      node('analysed', 'trigger.event', 0, 0, {
        label: 'Intake call analysed',
        event: 'call.analyzed',
        filter: [
          { field: 'direction', operator: 'equals', value: 'inbound' },
          { field: 'outcome', operator: 'equals', value: 'conversation' },
        ],
      }),
      node('car-accident', 'condition', 0, 120, {
        label: 'Car accident?',
        field: 'event.data.caller_data.case_type',
        operator: 'equals',
        value: 'Personal Injury',
      }),
      node('matter', 'clio.create_matter', -160, 240, {
        label: 'Open the matter',
        description: 'Car accident — {{lead.name}}: {{lead.summary}}',
      }),
      node('mail-pi', 'send_email', -160, 360, {
        label: 'Mail the PI team',
        to: [PI_TEAM],
        subject: 'New car accident intake: {{lead.name}}',
        body: 'Call back {{lead.phone}} ({{lead.email}}).\n\n{{lead.summary}}',
      }),
      node('a-day', 'wait', -160, 480, { label: 'Wait a day', duration: { days: 1 } }),
      node('booked?', 'condition', -160, 600, {
        label: 'No appointment yet?',
        field: 'lead.appointment.status',
        operator: 'not_equals',
        value: 'booked',
      }),
      node('call-again', 'call', -320, 720, {
        label: 'Call again',
        agent_id: agentId,
        dynamic_variables: { reason: 'follow-up on your accident' },
      }),
      {
        id: 'sticky-1',
        type: 'note',
        position: { x: 300, y: 0 },
        data: { text: 'Ask Dana before changing this flow', color: '#ffe066' },
        style: { width: 180 },
      },
    ],
    edges: [
      edge('e1', 'analysed', 'car-accident'),
      edge('e2', 'car-accident', 'matter', 'true'),
      edge('e3', 'matter', 'mail-pi'),
      edge('e4', 'mail-pi', 'a-day'),
      edge('e5', 'a-day', 'booked?'),
      edge('e6', 'booked?', 'call-again', 'true'),
    ],
  };
}
