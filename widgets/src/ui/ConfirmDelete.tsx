// An inline "Delete X? Yes / No" row: sandboxed frames block window.confirm(). Focus moves to the
// safe answer when the question appears and back to the Delete button when it goes.
import type { Ref } from "preact";
import { useEffect, useRef } from "preact/hooks";

export function useConfirmFocus(confirming: boolean) {
  const noButton = useRef<HTMLButtonElement>(null);
  const deleteButton = useRef<HTMLButtonElement>(null);
  const wasConfirming = useRef(false);
  useEffect(() => {
    if (confirming) noButton.current?.focus();
    else if (wasConfirming.current) deleteButton.current?.focus();
    wasConfirming.current = confirming;
  }, [confirming]);
  return { noButton, deleteButton };
}

export function ConfirmDelete(props: {
  question: string;
  deletingText: string;
  yes: string;
  no: string;
  busy: boolean;
  deleting: boolean;
  noButton: Ref<HTMLButtonElement>;
  onConfirm: () => void;
  onCancel: () => void;
  class?: string;
}) {
  return (
    <div
      class={`row ${props.class ?? ""}`}
      role="group"
      aria-label={props.question}
      data-testid="confirm-delete"
      onKeyDown={(e) => e.key === "Escape" && !props.deleting && props.onCancel()}
    >
      <span class="grow">{props.deleting ? props.deletingText : props.question}</span>
      <button class="btn danger" data-testid="confirm-yes" disabled={props.busy} onClick={props.onConfirm}>
        {props.yes}
      </button>
      <button ref={props.noButton} class="btn" data-testid="confirm-no" disabled={props.deleting} onClick={props.onCancel}>
        {props.no}
      </button>
    </div>
  );
}
