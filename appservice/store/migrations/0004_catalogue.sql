-- The global exercise catalogue and template library (organization_id NULL), seeded so that a
-- new service can be used at once. Instructions are written for the person doing the
-- exercise.

INSERT INTO exercises (organization_id, name, category, body_part, equipment, instructions, created_at) VALUES
(NULL, 'Squat', 'strength', 'legs', 'none', 'Stand with feet hip-width apart and toes slightly out. Push the hips back and bend the knees as if sitting onto a chair, keeping the chest up and the knees over the toes. Go as low as is comfortable, then push through the whole foot to stand up.', @NOW@),
(NULL, 'Forward lunge', 'strength', 'legs', 'none', 'Stand tall. Take a long step forward and lower the back knee towards the floor until both knees are bent about 90 degrees. Keep the front knee over the ankle and the trunk upright. Push off the front foot to return, then change sides.', @NOW@),
(NULL, 'Glute bridge', 'strength', 'hips', 'mat', 'Lie on your back with knees bent and feet flat, hip-width apart. Tighten the stomach and buttocks and lift the hips until the body is straight from shoulders to knees. Hold briefly and lower slowly without arching the lower back.', @NOW@),
(NULL, 'Single-leg bridge', 'strength', 'hips', 'mat', 'Lie on your back with knees bent. Straighten one leg in line with the other thigh. Press through the heel of the bent leg and lift the hips level, without letting the pelvis drop to one side. Lower slowly.', @NOW@),
(NULL, 'Plank', 'strength', 'core', 'mat', 'Rest on the forearms with elbows under the shoulders and legs straight behind you on the toes. Lift the body into a straight line from head to heels. Breathe normally, keep the stomach tight and do not let the hips sag or pike.', @NOW@),
(NULL, 'Side plank', 'strength', 'core', 'mat', 'Lie on your side with the elbow under the shoulder and the legs stacked (or knees bent for an easier version). Lift the hips so the body forms a straight line. Hold without rolling forward or back, then lower and change sides.', @NOW@),
(NULL, 'Bird dog', 'strength', 'core', 'mat', 'Start on hands and knees with hands under shoulders and knees under hips. Keep the back flat and slowly reach one arm forward and the opposite leg back until both are level with the body. Hold, return with control and change sides.', @NOW@),
(NULL, 'Dead bug', 'strength', 'core', 'mat', 'Lie on your back with arms pointing to the ceiling and hips and knees bent at 90 degrees. Press the lower back gently into the floor. Slowly lower one arm overhead and the opposite leg towards the floor, keeping the back still, then return and change sides.', @NOW@),
(NULL, 'Clamshell', 'strength', 'hips', 'band', 'Lie on your side with hips and knees bent and heels together, a band around the thighs if used. Keep the feet together and the pelvis still, and lift the top knee as far as you can without rolling back. Lower slowly.', @NOW@),
(NULL, 'Calf raise', 'strength', 'lower leg', 'none', 'Stand with the balls of the feet on the floor or a step, holding a support lightly. Rise up onto the toes as high as you can, pause, and lower the heels slowly. For more load, do it on one leg.', @NOW@),
(NULL, 'Wall sit', 'strength', 'legs', 'wall', 'Stand with your back against a wall and feet about half a metre in front of it. Slide down until the knees are bent to a comfortable angle, at most 90 degrees, with knees over the ankles. Hold the position, breathing normally, then slide up.', @NOW@),
(NULL, 'Push-up', 'strength', 'chest', 'none', 'Place the hands slightly wider than the shoulders and the legs straight behind you (or knees on the floor for an easier version). Keep the body in a straight line, bend the elbows to lower the chest towards the floor, and push back up.', @NOW@),
(NULL, 'Wall push-up', 'strength', 'chest', 'wall', 'Stand an arm length from a wall and place the hands on it at shoulder height. Keeping the body straight, bend the elbows to bring the chest towards the wall, then push back. Step further from the wall to make it harder.', @NOW@),
(NULL, 'Row with band', 'strength', 'upper back', 'band', 'Anchor an elastic band at chest height and hold an end in each hand with arms straight. Stand tall, pull the elbows back close to the body and squeeze the shoulder blades together. Return slowly without letting the shoulders round forward.', @NOW@),
(NULL, 'Shoulder external rotation with band', 'strength', 'shoulder', 'band', 'Stand with the side to the band anchor, elbow bent 90 degrees and tucked to the side (a rolled towel under the arm helps). Hold the band with the outer hand and rotate the forearm outwards, keeping the elbow at the side. Return slowly.', @NOW@),
(NULL, 'Shoulder internal rotation with band', 'strength', 'shoulder', 'band', 'Stand with the side to the band anchor, elbow bent 90 degrees and tucked to the side. Hold the band with the inner hand and rotate the forearm in across the stomach, keeping the elbow at the side. Return slowly.', @NOW@),
(NULL, 'Band pull-apart', 'strength', 'upper back', 'band', 'Hold a band in front of you at shoulder height with straight arms, hands shoulder-width apart. Pull the hands apart until the band touches the chest, squeezing the shoulder blades together. Return slowly.', @NOW@),
(NULL, 'Chin tuck', 'mobility', 'neck', 'none', 'Sit or stand tall looking straight ahead. Gently draw the chin straight back, making a double chin, without tipping the head up or down. Feel a stretch at the back of the neck, hold a few seconds and relax.', @NOW@),
(NULL, 'Cat-camel', 'mobility', 'back', 'mat', 'Start on hands and knees. Slowly round the back up towards the ceiling, letting the head drop, then slowly let the back sag while lifting the head and tailbone. Move within a comfortable range, in time with your breathing.', @NOW@),
(NULL, 'Hamstring stretch', 'stretching', 'legs', 'none', 'Lie on your back and lift one leg, holding behind the thigh (or with a towel around the foot). Straighten the knee until you feel a stretch at the back of the thigh, not behind the knee. Hold and breathe, then change legs.', @NOW@),
(NULL, 'Hip flexor stretch', 'stretching', 'hips', 'mat', 'Kneel on one knee with the other foot in front. Tighten the buttock of the kneeling side and shift the body forward until you feel a stretch at the front of the hip. Keep the trunk upright, hold, then change sides.', @NOW@),
(NULL, 'Calf stretch', 'stretching', 'lower leg', 'wall', 'Stand facing a wall with hands on it and one foot behind the other. Keep the back heel down and the back knee straight, and lean forward until you feel a stretch in the calf. Hold, then repeat with the back knee slightly bent.', @NOW@),
(NULL, 'Quadriceps stretch', 'stretching', 'legs', 'none', 'Stand holding a support. Bend one knee and take hold of the ankle behind you. Keep the knees together and the pelvis tucked under, and gently pull the heel towards the buttock until you feel a stretch at the front of the thigh.', @NOW@),
(NULL, 'Piriformis stretch', 'stretching', 'hips', 'mat', 'Lie on your back with both knees bent. Cross one ankle over the opposite knee, then pull the lower thigh towards the chest until you feel a stretch deep in the buttock of the crossed leg. Hold and change sides.', @NOW@),
(NULL, 'Knee to chest', 'stretching', 'back', 'mat', 'Lie on your back with knees bent. Bring one knee up and hold it with both hands, pulling it gently towards the chest until you feel a stretch in the lower back and buttock. Hold, lower, and change sides.', @NOW@),
(NULL, 'Step-up', 'strength', 'legs', 'step', 'Stand in front of a step or sturdy box. Place one whole foot on it and push through that heel to step up, bringing the other foot up beside it. Step down slowly with the same leading leg. Keep the knee in line with the toes.', @NOW@),
(NULL, 'Sit-to-stand', 'strength', 'legs', 'chair', 'Sit near the front of a firm chair with feet hip-width apart and a little behind the knees. Lean forward and stand up without using the hands, if you can. Sit down slowly and with control.', @NOW@),
(NULL, 'Heel slide', 'mobility', 'knee', 'mat', 'Lie on your back with legs straight. Slowly slide the heel of one leg towards the buttock, bending the knee as far as is comfortable, then slide it back out straight. A plastic bag under the heel makes it slide more easily.', @NOW@),
(NULL, 'Straight leg raise', 'strength', 'legs', 'mat', 'Lie on your back with one knee bent and the other leg straight. Tighten the thigh muscle of the straight leg and lift it to the height of the other knee. Hold briefly and lower slowly, keeping the knee straight throughout.', @NOW@),
(NULL, 'Quadriceps set', 'strength', 'knee', 'towel', 'Sit or lie with the leg straight and a small rolled towel under the knee. Tighten the front thigh muscle and press the back of the knee down into the towel. Hold for the time given and relax fully between repetitions.', @NOW@),
(NULL, 'Terminal knee extension', 'strength', 'knee', 'band', 'Loop a band behind the knee, anchored in front of you. Stand with the knee slightly bent, then straighten it fully against the band by tightening the thigh. Hold briefly and let the knee bend again slowly.', @NOW@),
(NULL, 'Ankle pumps', 'mobility', 'ankle', 'none', 'Sit or lie with the legs out in front. Pull the toes up towards you as far as you can, then point them away from you. Move steadily and rhythmically; this also helps the circulation.', @NOW@),
(NULL, 'Single-leg stance', 'balance', 'legs', 'none', 'Stand next to a support and lift one foot off the floor. Keep the standing knee soft and the pelvis level, and hold your balance. To make it harder, close the eyes or stand on a cushion.', @NOW@),
(NULL, 'Tandem walk', 'balance', 'legs', 'none', 'Walk forward along a line, placing the heel of one foot directly in front of the toes of the other. Look ahead, not at the feet, and walk slowly. Have a wall or counter within reach.', @NOW@),
(NULL, 'Heel-to-toe stance', 'balance', 'legs', 'none', 'Stand with one foot directly in front of the other, heel touching toes, near a support. Hold the position without holding on, if you can, then switch which foot is in front.', @NOW@),
(NULL, 'Marching in place', 'cardio', 'full body', 'none', 'Stand tall and march on the spot, lifting the knees to hip height if you can and swinging the arms. Keep a steady pace that makes you breathe a little faster while you can still talk.', @NOW@),
(NULL, 'Brisk walking', 'cardio', 'full body', 'none', 'Walk at a pace that makes you breathe faster and feel warm while you can still talk. Stand tall, swing the arms and roll through the feet. Start with a short distance and build up week by week.', @NOW@),
(NULL, 'Stationary cycling', 'cardio', 'legs', 'exercise bike', 'Adjust the saddle so the knee is slightly bent at the bottom of the pedal stroke. Pedal at an even pace with light resistance at first, then increase resistance so it feels moderately hard.', @NOW@),
(NULL, 'Pendulum', 'mobility', 'shoulder', 'table', 'Lean forward with the good hand on a table and let the other arm hang straight down, relaxed. Shift your body weight so the arm swings gently in small circles and back and forth. Let the movement come from the body, not the shoulder muscles.', @NOW@),
(NULL, 'Wall slide', 'mobility', 'shoulder', 'wall', 'Stand with your forearms on a wall at shoulder height, elbows shoulder-width apart. Slide the forearms up the wall as far as is comfortable, keeping the shoulders down away from the ears, then slide back down.', @NOW@),
(NULL, 'Thoracic rotation', 'mobility', 'back', 'mat', 'Lie on your side with knees bent to 90 degrees and arms straight in front. Keep the knees together on the floor and open the top arm to the other side, turning the chest and head to follow it. Return slowly.', @NOW@),
(NULL, 'Pelvic tilt', 'mobility', 'back', 'mat', 'Lie on your back with knees bent. Tighten the stomach and gently flatten the lower back against the floor by tilting the pelvis, then relax back to a small arch. Keep the movement small and controlled.', @NOW@),
(NULL, 'Side-lying leg raise', 'strength', 'hips', 'mat', 'Lie on your side with the lower knee bent and the top leg straight in line with the body. With the toes pointing forward, lift the top leg towards the ceiling without rolling back, and lower slowly.', @NOW@),
(NULL, 'Biceps curl', 'strength', 'arms', 'dumbbells', 'Stand with a weight in each hand, arms at the sides and palms forward. Keeping the elbows close to the body, bend the elbows to lift the weights to the shoulders, then lower slowly.', @NOW@),
(NULL, 'Overhead press', 'strength', 'shoulder', 'dumbbells', 'Stand or sit tall with a weight in each hand at shoulder height. Press the weights straight up until the arms are extended without locking the elbows, keeping the stomach tight, and lower with control.', @NOW@);

INSERT INTO workouts (organization_id, person_id, owner_account_id, title, notes, is_template, created_at, updated_at) VALUES
(NULL, NULL, NULL, 'Knee rehabilitation, week 1', 'Early exercises after a knee injury or operation: range of motion and waking up the thigh muscles. Mild discomfort is fine; sharp pain is not.', 1, @NOW@, @NOW@),
(NULL, NULL, NULL, 'Low back basics', 'Gentle movement and trunk control for everyday low back pain. Move within a comfortable range and keep breathing.', 1, @NOW@, @NOW@),
(NULL, NULL, NULL, 'Shoulder mobility', 'Range of motion and rotator cuff strength for a stiff or painful shoulder.', 1, @NOW@, @NOW@),
(NULL, NULL, NULL, 'Balance for seniors', 'Balance and leg strength to prevent falls. Always have a stable support within reach.', 1, @NOW@, @NOW@),
(NULL, NULL, NULL, 'Hip and core strength', 'Strength for the hips and trunk, for runners and after hip or back complaints.', 1, @NOW@, @NOW@);

WITH v (title, position, exercise, sets, reps, hold_seconds, load, rest_seconds, note) AS (VALUES
	('Knee rehabilitation, week 1', 1, 'Ankle pumps', 1, 20, 0, '', 0, 'Several times a day'),
	('Knee rehabilitation, week 1', 2, 'Heel slide', 2, 10, 0, '', 30, 'Slowly, as far as comfortable'),
	('Knee rehabilitation, week 1', 3, 'Quadriceps set', 3, 10, 5, '', 30, ''),
	('Knee rehabilitation, week 1', 4, 'Straight leg raise', 3, 10, 0, '', 60, 'Keep the knee straight'),
	('Knee rehabilitation, week 1', 5, 'Glute bridge', 2, 10, 0, '', 60, ''),
	('Low back basics', 1, 'Pelvic tilt', 2, 10, 0, '', 30, ''),
	('Low back basics', 2, 'Knee to chest', 2, 3, 30, '', 30, 'Each side'),
	('Low back basics', 3, 'Cat-camel', 2, 10, 0, '', 30, ''),
	('Low back basics', 4, 'Bird dog', 3, 8, 5, '', 45, 'Each side'),
	('Low back basics', 5, 'Glute bridge', 3, 10, 0, '', 60, ''),
	('Low back basics', 6, 'Dead bug', 2, 8, 0, '', 45, 'Each side'),
	('Shoulder mobility', 1, 'Pendulum', 2, 0, 30, '', 30, ''),
	('Shoulder mobility', 2, 'Wall slide', 2, 10, 0, '', 30, ''),
	('Shoulder mobility', 3, 'Shoulder external rotation with band', 3, 12, 0, 'light band', 60, ''),
	('Shoulder mobility', 4, 'Shoulder internal rotation with band', 3, 12, 0, 'light band', 60, ''),
	('Shoulder mobility', 5, 'Row with band', 3, 12, 0, 'medium band', 60, ''),
	('Shoulder mobility', 6, 'Chin tuck', 2, 10, 5, '', 30, ''),
	('Balance for seniors', 1, 'Marching in place', 1, 0, 60, '', 30, 'Warm-up'),
	('Balance for seniors', 2, 'Sit-to-stand', 3, 8, 0, '', 60, ''),
	('Balance for seniors', 3, 'Single-leg stance', 3, 0, 20, '', 30, 'Each leg, support within reach'),
	('Balance for seniors', 4, 'Heel-to-toe stance', 3, 0, 20, '', 30, ''),
	('Balance for seniors', 5, 'Tandem walk', 2, 0, 0, '', 30, 'Ten steps along a counter'),
	('Balance for seniors', 6, 'Calf raise', 2, 12, 0, '', 45, ''),
	('Hip and core strength', 1, 'Clamshell', 3, 15, 0, 'light band', 45, 'Each side'),
	('Hip and core strength', 2, 'Side-lying leg raise', 3, 12, 0, '', 45, 'Each side'),
	('Hip and core strength', 3, 'Single-leg bridge', 3, 8, 0, '', 60, 'Each side'),
	('Hip and core strength', 4, 'Plank', 3, 0, 30, '', 60, ''),
	('Hip and core strength', 5, 'Side plank', 3, 0, 20, '', 60, 'Each side'),
	('Hip and core strength', 6, 'Hip flexor stretch', 1, 2, 30, '', 0, 'Each side')
)
INSERT INTO workout_items (workout_id, position, exercise_id, sets, reps, hold_seconds, load, rest_seconds, note)
SELECT w.id, v.position, e.id, v.sets, v.reps, v.hold_seconds, v.load, v.rest_seconds, v.note
FROM v
JOIN workouts w ON w.title = v.title AND w.organization_id IS NULL AND w.is_template = 1
JOIN exercises e ON e.name = v.exercise AND e.organization_id IS NULL
ORDER BY w.id, v.position;
